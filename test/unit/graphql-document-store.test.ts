import { parse } from 'graphql';
import { boundedDocumentStore } from '../../src/graphql/document-store.js';

describe('Apollo’s documentStore', () => {
  const text = (fill: string, chars: number) => `{ b(s: "${fill.repeat(chars)}") }`;

  it('gives back the same document object for the same key (graphql-jit’s compiled functions hang on it)', async () => {
    const store = boundedDocumentStore();
    const document = parse('{ a }');
    await store.set('k', document);
    expect(await store.get('k')).toBe(document);
  });

  it('keeps no long text: a caller cannot fill the memory with a few huge documents', async () => {
    const store = boundedDocumentStore();
    await store.set('huge', parse(text('x', 70 * 1024)));
    expect(await store.get('huge')).toBeUndefined();
  });

  it('forgets the least recently used documents once their texts add up past the bound', async () => {
    const store = boundedDocumentStore();
    for (let i = 0; i <= 5; i++) await store.set(`d${i}`, parse(text(String(i), 60 * 1024)));
    expect(await store.get('d0')).toBeUndefined();
    expect(await store.get('d5')).toBeDefined();
  });
});
