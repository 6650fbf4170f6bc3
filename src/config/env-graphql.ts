import { z } from 'zod';
import { bool } from './kinds.js';

/** The GraphQL door: its limits, persisted and trusted documents. */
export const graphqlVariables = {
  GRAPHQL_INTROSPECTION: bool.optional().meta({
    description: 'Introspection and the GraphQL landing page (`true`/`false`).',
    unset: 'on outside production, off in production',
  }),
  GRAPHQL_MAX_DEPTH: z.coerce
    .number()
    .int()
    .positive()
    .default(10)
    .describe('Deepest selection in one operation (graphql-armor), the same on HTTP and WebSocket; past it: `400 INVALID_INPUT`.'),
  GRAPHQL_MAX_ALIASES: z.coerce
    .number()
    .int()
    .positive()
    .default(15)
    .describe('Most aliases in one operation (graphql-armor); past it: `400 INVALID_INPUT`.'),
  GRAPHQL_MAX_TOKENS: z.coerce
    .number()
    .int()
    .positive()
    .default(1000)
    .describe("Most tokens in one operation's text (graphql-js); past it: `400 INVALID_INPUT`."),
  GRAPHQL_MAX_COST: z.coerce
    .number()
    .int()
    .positive()
    .default(30000)
    .describe(
      'Largest estimated cost of one GraphQL operation, weighed with its variables before it runs (refused `400 INVALID_INPUT` past it): a leaf field costs 1, an object 2 plus 1.5 times what it selects, and a page of a list (a field taking `first`) as many times as the rows it asks for, whether `first` is written in the text or given as a variable (at most 100; 20 when not given).',
    ),
  GRAPHQL_MAX_DIRECTIVES: z.coerce
    .number()
    .int()
    .positive()
    .default(50)
    .describe('Most directives (`@include`, `@skip`) in one operation.'),
  GRAPHQL_PERSISTED_DOCUMENTS: z.string().min(1).optional().meta({
    description:
      "A trusted-documents manifest (graphql-codegen client preset's `persisted-documents.json` or Apollo's persisted query manifest); its documents may be sent by hash alone.",
    unset: "only the account area's own documents are trusted",
  }),
  GRAPHQL_TRUSTED_DOCUMENTS_ONLY: bool.optional().meta({
    description: '`true`: only trusted documents run, on both doors (`400 INVALID_INPUT` for any other), except for analysts and admins.',
    unset: '`false`',
  }),
  GRAPHQL_APQ_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3600)
    .default(24 * 3600)
    .describe(
      'How long a document registered by automatic persisted queries is kept (in memory, and in Redis with `GRAPHQL_APQ_REDIS_URL`).',
    ),
  GRAPHQL_APQ_REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// URL')
    .optional()
    .meta({
      description:
        "A Redis server of its own (not `REDIS_URL`'s: eviction policies are per server) where automatic persisted queries are shared by every instance. Run it as a cache: `maxmemory` set and `maxmemory-policy allkeys-lru`. Start-up refuses the same server as `REDIS_URL`, whatever the database number.",
      unset: 'each process keeps its own, in memory (2 MiB of text)',
    }),
  GRAPHQL_APQ_REGISTRATIONS_PER_DAY: z.coerce
    .number()
    .int()
    .positive()
    .default(1000)
    .describe(
      "New automatic persisted queries one account may register per day (24 h window; only authenticated callers register, anonymous callers' documents run but are never stored). Past it: `429 RATE_LIMITED` with `Retry-After`; others' documents are never evicted for it.",
    ),
  GRAPHQL_APQ_BYTES_PER_DAY: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024)
    .describe(
      'Bytes of persisted query text one account may register per day, counted after comments and padding are stripped (each text at most 16 KiB). Past it: `429 RATE_LIMITED`.',
    ),
};
