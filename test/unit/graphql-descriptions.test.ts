import {
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedScalarType,
  type GraphQLSchema,
} from 'graphql';
import { RESOLVERS } from '../../src/graphql/resolvers.js';
import { buildGraphqlSchema } from '../../src/graphql/schema.js';

/** Every place of the schema a client reads documentation from, that has none. */
function undocumented(schema: GraphQLSchema): string[] {
  const missing: string[] = [];
  const need = (where: string, description: string | null | undefined) => {
    if (!description?.trim()) missing.push(where);
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
    need(type.name, type.description);
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        need(`${type.name}.${field.name}`, field.description);
        for (const arg of field.args) need(`${type.name}.${field.name}(${arg.name})`, arg.description);
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) need(`${type.name}.${field.name}`, field.description);
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) need(`${type.name}.${value.name}`, value.description);
    }
  }
  return missing;
}

describe('the GraphQL schema documents itself', () => {
  it('gives every type, field, argument, input field and enum value a description', async () => {
    expect(undocumented(await buildGraphqlSchema([...RESOLVERS]))).toEqual([]);
  });

  it('the check finds what lacks one', async () => {
    const { buildSchema } = await import('graphql');
    const bare = buildSchema('"""documented""" type Query { """documented""" a(x: Int): Kind } enum Kind { """documented""" ONE TWO }');
    expect(undocumented(bare)).toEqual(['Query.a(x)', 'Kind', 'Kind.TWO']);
  });
});
