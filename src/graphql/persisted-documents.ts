import { getOperationAST, parse, validate, type GraphQLSchema } from 'graphql';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { AppError } from '../errors.js';
import { accountPolicy } from '../modules/accounts/account.policy.js';
import type { Principal } from '../modules/api-keys/api-key.service.js';

/** One document of a manifest: its text, and its operation's name and type when it has one. */
export interface PersistedDocument {
  text: string;
  name: string | null;
  type: 'query' | 'mutation' | 'subscription' | null;
}

/** What a manifest holds, by SHA-256 of the text (lowercase hex): what APQ clients send as `sha256Hash`. */
export type Manifest = ReadonlyMap<string, PersistedDocument>;

const SHA256 = /^[0-9a-f]{64}$/;

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Reads a trusted-documents manifest, in either of the two formats frontends' tools write:
 * - graphql-codegen's client preset (`persistedDocuments: true`): `persisted-documents.json`, an
 *   object of hash → document text, the hash `sha256:<hex>` or `<hex>` (`hashAlgorithm: 'sha1'` will not do);
 * - Apollo's `generate-persisted-query-manifest`: `{ format: "apollo-persisted-query-manifest",
 *   version: 1, operations: [{ id, name, type, body }] }`.
 * Every id must be the SHA-256 of its text, as automatic persisted queries compute it (so a client
 * may send the hash alone, or the text with its hash), and every text must parse. Returns every
 * problem at once; with a schema, documents that would not validate against it are problems too.
 */
export function readManifest(text: string, schema?: GraphQLSchema): { manifest: Manifest; problems: string[] } {
  const problems: string[] = [];
  const manifest = new Map<string, PersistedDocument>();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { manifest, problems: [`not JSON (${(err as Error).message})`] };
  }
  const entries = manifestEntries(json);
  if (!entries)
    return {
      manifest,
      problems: ['neither format: an object of SHA-256 → document (graphql-codegen client preset) nor an apollo-persisted-query-manifest'],
    };
  for (const [key, body] of entries) {
    // The client preset (v6) writes `sha256:<hex>`.
    const id = key.replace(/^sha256:/, '');
    const where = `document ${id.slice(0, 16)}${id.length > 16 ? '…' : ''}`;
    if (typeof body !== 'string' || body.trim() === '') {
      problems.push(`${where}: its text is not a non-empty string`);
      continue;
    }
    if (!SHA256.test(id) || sha256Hex(body) !== id) {
      problems.push(`${where}: the id is not the SHA-256 of the text (set hashAlgorithm: 'sha256')`);
      continue;
    }
    try {
      const document = parse(body);
      const errors = schema ? validate(schema, document) : [];
      if (errors.length) {
        problems.push(`${where}: ${errors[0].message}`);
        continue;
      }
      const operation = getOperationAST(document);
      manifest.set(id, { text: body, name: operation?.name?.value ?? null, type: operation?.operation ?? null });
    } catch (err) {
      problems.push(`${where}: ${(err as Error).message}`);
    }
  }
  return { manifest, problems };
}

function manifestEntries(json: unknown): [string, unknown][] | null {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return null;
  const o = json as Record<string, unknown>;
  if (o.format === 'apollo-persisted-query-manifest') {
    if (!Array.isArray(o.operations)) return null;
    return o.operations.map((op: { id?: unknown; body?: unknown }) => [String(op?.id ?? ''), op?.body]);
  }
  return Object.entries(o);
}

/** Reads a manifest file, or throws with every problem found in it. */
export function loadManifestFile(path: string, schema?: GraphQLSchema): Manifest {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`GRAPHQL_PERSISTED_DOCUMENTS: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const { manifest, problems } = readManifest(text, schema);
  if (problems.length) throw new Error(`GRAPHQL_PERSISTED_DOCUMENTS: ${path}: ${problems.join('; ')}`);
  return manifest;
}

/**
 * A built page's own manifest (the account area's), when it was built. A document that no longer
 * validates (a page built before the schema changed) is left out with a warning: the page is
 * rebuilt with the schema (`npm run build`), and the server need not refuse to start for it.
 */
export function loadBuiltManifest(path: string | null, schema: GraphQLSchema, log: { warn(obj: object, msg: string): void }): Manifest {
  if (!path || !existsSync(path)) return new Map();
  const { manifest, problems } = readManifest(readFileSync(path, 'utf8'), schema);
  if (problems.length)
    log.warn({ manifest: path, problems }, 'documents of the account area’s manifest were left out: rebuild it (npm run build)');
  return manifest;
}

export const UNTRUSTED_MESSAGE =
  'This server runs only trusted documents (GRAPHQL_TRUSTED_DOCUMENTS_ONLY): send a document of its manifest, by its SHA-256 hash in extensions.persistedQuery.';

/**
 * The trusted documents: the account area's own and the operator's manifest (GRAPHQL_PERSISTED_DOCUMENTS),
 * served by hash alone on both doors, and with `only` the sole documents callers other than
 * analysts and admins may run (analysts write their queries by hand).
 */
export class TrustedDocuments {
  readonly byHash: Manifest;
  /** The operation names of the manifests: the only names per-operation metrics keep. */
  readonly names: ReadonlySet<string>;

  constructor(
    manifests: Manifest[],
    readonly only: boolean,
  ) {
    this.byHash = new Map(manifests.flatMap((m) => [...m]));
    this.names = new Set([...this.byHash.values()].flatMap((d) => (d.name ? [d.name] : [])));
  }

  /** The text of a trusted document, by its hash. */
  text(hash: unknown): string | undefined {
    return typeof hash === 'string' ? this.byHash.get(hash)?.text : undefined;
  }

  /**
   * Whether a request may run, in trusted-only mode: its document is trusted (by the hash it sent,
   * or the text's own), or the caller is an analyst or an admin. Else INVALID_INPUT. The caller is
   * only resolved for a document outside the manifest.
   */
  async admit(query: string | undefined, hash: unknown, principal: () => Promise<Principal>): Promise<void> {
    if (!this.only) return;
    if (query !== undefined ? this.byHash.has(sha256Hex(query)) : typeof hash === 'string' && this.byHash.has(hash)) return;
    const caller = await principal().catch(() => null);
    if (caller && accountPolicy.mayRunUntrustedDocuments(caller)) return;
    throw new AppError('INVALID_INPUT', UNTRUSTED_MESSAGE);
  }
}
