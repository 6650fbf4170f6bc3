import type { DocumentStore } from '@apollo/server';
import { InMemoryLRUCache } from '@apollo/utils.keyvaluecache';
import type { DocumentNode } from 'graphql';

/** Distinct documents kept parsed and validated. */
const MAX_DOCUMENTS = 1000;
/**
 * The characters of text they may add up to. A parsed document keeps its text and about 120 bytes
 * of syntax tree per character when dense with tokens (measured), so this bounds the store near
 * 30 MB whatever callers send; a document longer than MAX_STORED_CHARS is parsed each time it comes.
 */
const MAX_TOTAL_CHARS = 256 * 1024;
const MAX_STORED_CHARS = 64 * 1024;

/** A document's size here: the length of the text it was parsed from (Apollo keeps only valid ones). */
const textLength = (document: DocumentNode) => Math.max(1, document.loc?.source.body.length ?? 1);

/**
 * Apollo Server's `documentStore`: the parsed and validated documents by their text's hash, bounded
 * by text size as documents.ts bounds the WebSocket door's (Apollo's default measures each entry by
 * serialising its syntax tree to JSON, which costs more than parsing it again). A document is the
 * same object every time it is found, so graphql-jit's compiled functions hang on it
 * (jit-executor.ts) and go when it goes.
 */
export function boundedDocumentStore(): DocumentStore {
  return new InMemoryLRUCache<DocumentNode>({
    max: MAX_DOCUMENTS,
    maxSize: MAX_TOTAL_CHARS,
    maxEntrySize: MAX_STORED_CHARS,
    sizeCalculation: textLength,
  });
}
