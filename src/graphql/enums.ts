import { registerEnumType } from 'type-graphql';

/**
 * A GraphQL enum whose values are exactly the given string constants (one source of truth for both),
 * with what the enum and each of its values mean.
 */
export function stringEnum<const T extends readonly string[]>(
  values: T,
  name: string,
  description: string,
  valueDescriptions: { [K in T[number]]: string },
): { [K in T[number]]: K } {
  const e = Object.fromEntries(values.map((v) => [v, v])) as { [K in T[number]]: K };
  const valuesConfig = Object.fromEntries(values.map((v) => [v, { description: valueDescriptions[v as T[number]] }])) as Partial<
    Record<T[number], { description: string }>
  >;
  registerEnumType(e, { name, description, valuesConfig });
  return e;
}
