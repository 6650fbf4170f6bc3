import { defaultFieldResolver, isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { Extensions } from 'type-graphql';
import { requireScope } from '../modules/access.js';
import type { ApiKeyScope } from '../modules/api-keys/api-key.service.js';
import type { GqlContext } from './context.js';

/**
 * The scope rule of a field that reaches another object: a scope the caller's key must hold, or
 * INHERITS for a field that only shows more of what its parent already showed (the same owner's
 * data, reached through a field that checked a scope). It is the field's `extensions.scope` in the
 * executable schema, enforced by enforceScopes, and walked by test/unit/graphql-scopes.test.ts.
 */
export type ScopeRule = ApiKeyScope | typeof INHERITS;

export const INHERITS = 'inherits-parent';

/** The caller's key must hold `scope` to reach this field: else FORBIDDEN, and its resolver does not run. */
export const RequiresScope = (scope: ApiKeyScope) => Extensions({ scope });

/** The field shows only more of its parent's owner's data: its parent's scope covers it. */
export const InheritsScope = () => Extensions({ scope: INHERITS });

/** A field's declared rule, if it has one. */
export function scopeRule(extensions: { readonly scope?: unknown } | null | undefined): ScopeRule | undefined {
  return extensions?.scope as ScopeRule | undefined;
}

const guarded =
  (scope: string, next: GraphQLFieldResolver<unknown, GqlContext>): GraphQLFieldResolver<unknown, GqlContext> =>
  (root, args, ctx, info) =>
    ctx.principal().then((principal) => {
      requireScope(principal, scope);
      return next(root, args, ctx, info);
    });

/**
 * Puts each field's declared scope in front of its resolver (a subscription's: in front of
 * subscribing), on the built schema, so that whatever runs it (graphql-js, graphql-jit, the
 * WebSocket door) checks the rule the field declares. Fields that inherit are left as they are.
 */
export function enforceScopes(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      const rule = scopeRule(field.extensions);
      if (!rule || rule === INHERITS) continue;
      if (field.subscribe) field.subscribe = guarded(rule, field.subscribe);
      else field.resolve = guarded(rule, field.resolve ?? defaultFieldResolver);
    }
  }
  return schema;
}
