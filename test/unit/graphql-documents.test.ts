import { buildSchema } from 'graphql';
import { documentCache } from '../../src/graphql/documents.js';
import { operationLimits } from '../../src/graphql/limits.js';

describe('the GraphQL document cache', () => {
  const schema = buildSchema('type Query { a: Int, b(s: String): Int }');
  const limits = operationLimits({ maxDepth: 10, maxAliases: 15, maxTokens: 1000, maxCost: 30000, maxDirectives: 50 } as never, schema);
  const cache = () => documentCache(schema, limits, { introspection: false });

  it('parses and validates a text once, refusals included', () => {
    const documents = cache();
    const first = documents.prepare('{ a }');
    expect(first.document).toBeDefined();
    expect(documents.prepare('{ a }')).toBe(first);
    const refused = documents.prepare('{ nope }');
    expect(refused.errors?.[0].message).toMatch(/Cannot query field "nope"/);
    expect(documents.prepare('{ nope }')).toBe(refused);
    // The rules are the doors': limits, and introspection when it is off.
    expect(documents.prepare('{ __schema { queryType { name } } }').errors?.[0].message).toMatch(/introspection has been disabled/);
    expect(documents.prepare(`{ ${'x: a '.repeat(16)}}`).errors?.[0].message).toMatch(/aliases/i);
  });

  it('keeps no long text: a caller cannot fill the memory with a few huge documents', () => {
    const documents = cache();
    const huge = `{ b(s: "${'x'.repeat(70 * 1024)}") }`;
    const once = documents.prepare(huge);
    expect(once.document).toBeDefined();
    expect(documents.prepare(huge)).not.toBe(once);
  });

  it('forgets the least recently used texts once they add up past the bound', () => {
    const documents = cache();
    const first = documents.prepare(`{ b(s: "${'0'.repeat(60 * 1024)}") }`);
    for (let i = 1; i <= 5; i++) documents.prepare(`{ b(s: "${String(i).repeat(60 * 1024)}") }`);
    expect(documents.prepare(`{ b(s: "${'0'.repeat(60 * 1024)}") }`)).not.toBe(first);
  });
});
