import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

/**
 * Every success body a test receives from the REST door is checked against the OpenAPI document the
 * server serves at /docs/json, which is the committed schema/openapi.yaml (test/integration/
 * api-reference.test.ts holds them equal; read from the file, the check makes no request of its own):
 * the path, the method and the status must be documented, and the JSON body must match its schema. A
 * body the document does not describe fails the test that received it, whatever that test was about.
 */

interface OpenApi {
  paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: object }> }> }>>;
}

interface Checker {
  check(method: string, path: string, status: number, contentType: string | null, body: string): void;
}

let checker: Checker | undefined;

/** Checks one answer of the REST door (throws with what is wrong). */
export function checkAgainstOpenApi(answer: {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  body: string;
}): void {
  if (answer.status < 200 || answer.status >= 300 || !answer.path.startsWith('/api/')) return;
  if (!answer.contentType?.includes('json')) return;
  checker ??= loadChecker();
  checker.check(answer.method, answer.path, answer.status, answer.contentType, answer.body);
}

function loadChecker(): Checker {
  const doc = parse(readFileSync(new URL('../../schema/openapi.yaml', import.meta.url), 'utf8')) as OpenApi;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ ...doc, $id: 'openapi' });
  const routes = Object.keys(doc.paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
  const compiled = new Map<string, ValidateFunction>();
  return {
    check(method, path, status, _contentType, body) {
      const bare = path.split('?')[0];
      const route = routes.find((r) => r.pattern.test(bare));
      const where = `${method} ${bare} → ${status}`;
      if (!route) throw new Error(`OpenAPI: ${where} answered JSON on a path the document does not describe`);
      const operation = doc.paths[route.template][method.toLowerCase()];
      const response = operation?.responses?.[String(status)];
      if (!response) throw new Error(`OpenAPI: ${where} is not a documented response`);
      if (!response.content?.['application/json']?.schema) throw new Error(`OpenAPI: ${where} documents no JSON body`);
      const pointer = ['paths', route.template, method.toLowerCase(), 'responses', String(status), 'content', 'application/json', 'schema']
        .map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1'))
        .join('/');
      let validate = compiled.get(pointer);
      if (!validate) {
        validate = ajv.compile({ $ref: `openapi#/${pointer}` });
        compiled.set(pointer, validate);
      }
      const value: unknown = JSON.parse(body);
      if (!validate(value)) {
        throw new Error(
          `OpenAPI: the body of ${where} does not match the document: ${ajv.errorsText(validate.errors)}\n${body.slice(0, 2000)}`,
        );
      }
    },
  };
}
