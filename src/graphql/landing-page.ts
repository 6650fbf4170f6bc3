import { printSchema, type GraphQLSchema } from 'graphql';
import { createHash } from 'node:crypto';

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem 1.5rem;color:#1b1f24}
code,pre{font:13px/1.45 ui-monospace,monospace;background:#f3f4f6;border-radius:4px}code{padding:0 .25em}
pre{padding:.75rem 1rem;overflow:auto;white-space:pre-wrap}h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}a{color:#0b57d0}`;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * GET /graphql in a browser: what the endpoint is, how to call it, and the whole schema with its
 * descriptions, in one page with no script and nothing from another origin, so it works offline.
 * (Explorers such as Apollo Sandbox load their code from a CDN and show only "you might be offline"
 * without it.) Apollo Sandbox is linked for those online.
 */
export function localLandingPage(schema: GraphQLSchema, publicUrl: string): string {
  const endpoint = `${publicUrl}/graphql`;
  const sandbox = `https://studio.apollographql.com/sandbox/explorer?endpoint=${encodeURIComponent(endpoint)}`;
  const curl = `curl ${endpoint} \\\n  -H 'Authorization: Bearer mg_live_…' -H 'Content-Type: application/json' \\\n  -d '{"query":"{ me { name credits { available held } } }"}'`;
  const styleHash = createHash('sha256').update(STYLE).digest('base64');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-${styleHash}'; base-uri 'none'; form-action 'none'">
<title>mediagate GraphQL</title>
<style>${STYLE}</style>
</head>
<body>
<h1>mediagate GraphQL</h1>
<p>POST GraphQL requests to <code>${escapeHtml(endpoint)}</code> (GET works for queries), with <code>Authorization: Bearer &lt;API key&gt;</code>.
Subscriptions (<code>jobUpdated</code>) use the graphql-ws protocol on the same path. Errors carry their code in <code>extensions.code</code>.</p>
<pre>${escapeHtml(curl)}</pre>
<p>The REST routes: <a href="/docs">/docs</a>. An interactive explorer (needs internet): <a href="${escapeHtml(sandbox)}" rel="noreferrer">Apollo Sandbox</a>.</p>
<h2>Schema</h2>
<pre>${escapeHtml(printSchema(schema))}</pre>
</body>
</html>
`;
}

/** The landing page goes with introspection (GRAPHQL_INTROSPECTION: on outside production): both show the schema. */
export function landingPage(schema: GraphQLSchema, config: { publicUrl: string; graphql: { introspection: boolean } }): string | null {
  return config.graphql.introspection ? localLandingPage(schema, config.publicUrl) : null;
}
