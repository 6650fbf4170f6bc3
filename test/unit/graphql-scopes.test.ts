import { getNamedType, isCompositeType, isObjectType, type GraphQLField, type GraphQLObjectType, type GraphQLSchema } from 'graphql';
import { RESOLVERS } from '../../src/graphql/resolvers.js';
import { buildGraphqlSchema } from '../../src/graphql/schema.js';
import { INHERITS, scopeRule } from '../../src/graphql/scopes.js';
import { API_KEY_SCOPES, type Principal } from '../../src/modules/api-keys/api-key.service.js';
import { isAppError } from '../../src/errors.js';

/**
 * Every field of the executable schema that reaches another object (an object, a list of them, a
 * connection) declares a scope rule (`extensions.scope`): a scope, enforced in front of its
 * resolver, or "inherits its parent's". The walk reads the rules from the built schema and calls
 * each guarded resolver with keys that lack its scope, so what it checks is what runs.
 */

type Walked = { parent: GraphQLObjectType; name: string; field: GraphQLField<unknown, unknown> };

function objectTypes(schema: GraphQLSchema): GraphQLObjectType[] {
  return Object.values(schema.getTypeMap()).filter((t): t is GraphQLObjectType => isObjectType(t) && !t.name.startsWith('__'));
}

/** Every field whose type, unwrapped from lists and non-null, is an object (or interface or union). */
function fieldsReachingObjects(schema: GraphQLSchema): Walked[] {
  return objectTypes(schema).flatMap((parent) =>
    Object.values(parent.getFields())
      .filter((field) => isCompositeType(getNamedType(field.type)))
      .map((field) => ({ parent, name: `${parent.name}.${field.name}`, field })),
  );
}

const rootNames = (schema: GraphQLSchema) =>
  new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].map((t) => t?.name));

/**
 * The scopes a caller surely holds whenever a type's fields run: along every way in from a root,
 * each field checked its scope (an inheriting field checks none of its own). Greatest fixpoint of
 * guaranteed(T) = ∩ over the fields f: P → T of (guaranteed(P) ∪ {scope(f)}), roots guaranteeing nothing.
 */
function guaranteedScopes(schema: GraphQLSchema): Map<string, Set<string>> {
  const roots = rootNames(schema);
  const guaranteed = new Map(objectTypes(schema).map((t) => [t.name, new Set<string>(roots.has(t.name) ? [] : API_KEY_SCOPES)]));
  const edges = fieldsReachingObjects(schema);
  for (let changed = true; changed; ) {
    changed = false;
    for (const { parent, field } of edges) {
      const target = getNamedType(field.type).name;
      const into = guaranteed.get(target);
      if (!into) continue;
      const rule = scopeRule(field.extensions);
      const along = new Set(guaranteed.get(parent.name));
      if (rule && rule !== INHERITS) along.add(rule);
      for (const s of [...into]) if (!along.has(s)) into.delete(s), (changed = true);
    }
  }
  return guaranteed;
}

const principal = (scopes: readonly string[]): Principal => ({
  accountId: '00000000-0000-4000-8000-000000000001',
  apiKeyId: '00000000-0000-4000-8000-000000000002',
  scopes: new Set(scopes),
  isMember: true,
  // Past every role check, so a refusal can only be the scope's.
  roles: new Set(['admin']),
  via: 'api_key',
});

/** A context whose services and loaders throw when touched: a resolver that reached them ran past the scope check. */
const contextOf = (who: Principal) => {
  const untouchable = new Proxy(
    {},
    {
      get: () => {
        throw new Error('reached the resolver');
      },
    },
  );
  return { requestId: 'scopes-test', principal: async () => who, services: untouchable, loaders: untouchable };
};

/** What calling the field's guarded entry (subscribe for a subscription) did. */
async function call(field: GraphQLField<unknown, unknown>, who: Principal): Promise<unknown> {
  const entry = field.subscribe ?? field.resolve;
  if (!entry) return 'a plain property read';
  try {
    return await entry(
      { id: '00000000-0000-4000-8000-000000000003', accountId: '00000000-0000-4000-8000-000000000001', input: {} },
      {},
      contextOf(who),
      {} as never,
    );
  } catch (err) {
    return err;
  }
}

const scopeRefusal = (err: unknown, scope: string) =>
  isAppError(err) && err.code === 'FORBIDDEN' && err.message.includes(`"${scope}" scope`);

describe('scope rules cover every field of the GraphQL schema', () => {
  let schema: GraphQLSchema;
  beforeAll(async () => {
    schema = await buildGraphqlSchema([...RESOLVERS]);
  });

  it('walks a schema with fields that reach objects on the roots and on the types', () => {
    const walked = fieldsReachingObjects(schema).map((f) => f.name);
    expect(walked).toEqual(
      expect.arrayContaining([
        'Query.me',
        'Mutation.startTranscription',
        'Subscription.jobUpdated',
        'Job.account',
        'Job.webhook',
        'JobWebhook.attempts',
        'JobConnection.edges',
      ]),
    );
  });

  it('has a rule, a known scope or "inherits", on every field that reaches another object', () => {
    const missing = fieldsReachingObjects(schema)
      .filter(({ field }) => {
        const rule = scopeRule(field.extensions);
        return rule !== INHERITS && !(API_KEY_SCOPES as readonly unknown[]).includes(rule);
      })
      .map((f) => f.name);
    expect(missing).toEqual([]);
  });

  it('gives every root field a scope of its own (a root has no parent to inherit from)', () => {
    const roots = rootNames(schema);
    const inheriting = fieldsReachingObjects(schema)
      .filter(({ parent, field }) => roots.has(parent.name) && scopeRule(field.extensions) === INHERITS)
      .map((f) => f.name);
    expect(inheriting).toEqual([]);
  });

  it('enforces each declared scope: a key without it is FORBIDDEN before the resolver runs, a key with only it gets past', async () => {
    const guarded = fieldsReachingObjects(schema).filter(({ field }) => scopeRule(field.extensions) !== INHERITS);
    expect(guarded.length).toBeGreaterThan(15);
    const problems: string[] = [];
    for (const { name, field } of guarded) {
      const scope = scopeRule(field.extensions)!;
      const without = await call(field, principal(API_KEY_SCOPES.filter((s) => s !== scope)));
      if (!scopeRefusal(without, scope)) problems.push(`${name}: a key without "${scope}" got ${String(without)}`);
      const only = await call(field, principal([scope]));
      if (isAppError(only) && only.code === 'FORBIDDEN' && /scope/.test(only.message))
        problems.push(`${name}: a key with only "${scope}" got ${only.message}`);
    }
    expect(problems).toEqual([]);
  });

  it('needs read for the account and the webhook of a job, and for every way to an account or to webhook attempts', () => {
    const rule = (type: string, field: string) =>
      scopeRule(schema.getType(type) && (schema.getType(type) as GraphQLObjectType).getFields()[field]?.extensions);
    expect(rule('Job', 'account')).toBe('read');
    expect(rule('Job', 'webhook')).toBe('read');
    expect(rule('Mutation', 'cancelJob')).toBe('transcribe');
    const guaranteed = guaranteedScopes(schema);
    // What a caller must hold, whichever way it came, to see each type holding an account's data.
    const needs: Record<string, string> = {
      Account: 'read',
      Membership: 'read',
      CreditBalance: 'read',
      OperationUsage: 'read',
      AccountConnection: 'read',
      JobWebhook: 'read',
      WebhookAttempt: 'read',
      CreditEntry: 'read',
      CreditEntryConnection: 'read',
      UsageBucket: 'read',
      JobConnection: 'read',
      ApiKey: 'keys',
      WebhookSecret: 'keys',
    };
    const reachableWithout = Object.entries(needs)
      .filter(([type, scope]) => !guaranteed.get(type)?.has(scope))
      .map(([type, scope]) => `${type} without ${scope}`);
    expect(reachableWithout).toEqual([]);
  });
});
