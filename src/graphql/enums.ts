import { registerEnumType } from 'type-graphql';

/** A GraphQL enum whose values are exactly the given string constants (one source of truth for both). */
export function stringEnum<const T extends readonly string[]>(values: T, name: string, description?: string): { [K in T[number]]: K } {
  const e = Object.fromEntries(values.map((v) => [v, v])) as { [K in T[number]]: K };
  registerEnumType(e, { name, description });
  return e;
}
