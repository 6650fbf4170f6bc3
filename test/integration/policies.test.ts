import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { isAppError } from '../../src/errors.js';
import { API_KEY_SCOPES, OPERATOR, type Principal } from '../../src/modules/principal.js';
import type { Services } from '../../src/root.js';
import { factories } from '../support/factories.js';
import { createHarness, type Harness } from '../support/harness.js';

/**
 * Every rule is the services' own, so a new door (a REST route, the CLI, a queue consumer) cannot
 * skip one. This test calls every public method of every service directly, as a door would, with a
 * caller lacking each scope the method needs, and with another account's resources, and fails when
 * the method acts: when it answers with what it should have refused, or when anything in the
 * database changed. A method that is not in one of the two tables below fails the test, so a new
 * method must say which rule guards it (or why it takes no caller).
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

let h: Harness;
/** Account A: the resources; account B: the stranger. */
let a: { accountId: string; keyId: string; jobId: string; transcriptionId: string };
let b: { accountId: string };

type ServiceName = Exclude<keyof Services, 'config' | 'log' | 'metrics' | 'notifications' | 'close'>;

/** A caller of `accountId` holding `scopes` (all by default), a member, an ordinary holder signed in with a key. */
function caller(accountId: string, scopes: readonly string[] = API_KEY_SCOPES, extra: Partial<Principal> = {}): Principal {
  return {
    accountId,
    apiKeyId: null,
    scopes: new Set(scopes),
    isMember: true,
    roles: new Set(),
    via: 'session',
    ...extra,
  };
}

interface CallerMethod {
  /** The scopes it needs: each is taken away in turn, and the call must be refused. */
  scopes: readonly string[];
  /**
   * Whom beyond the holder's scopes it needs: admins (the operator) only, or analysts and admins.
   * An ordinary holder with every scope must be refused (and an analyst too, for admins' methods).
   */
  role?: 'admin' | 'analyst';
  /** The call, by `p`, on account A's resources. */
  call: (s: Services, p: Principal) => Promise<unknown>;
  /**
   * For calls that filter rather than refuse (batched reads): what a refused caller gets must hold
   * nothing of account A. Unset: the call must reject.
   */
  filtered?: (answer: unknown) => boolean;
  /** Whether a caller without the scope gets nothing (`filtered`) rather than a refusal: a job's webhook attempts are left out of a transcribe-only key's 202. */
  scopeFilters?: boolean;
  /** Whether a caller of account B, with every scope, may not reach A's resources through it (false: it has no subject but the caller's own). */
  subject?: boolean;
}

const empty = (answer: unknown) =>
  answer instanceof Map ? answer.size === 0 : Array.isArray(answer) ? answer.length === 0 : answer === null || answer === undefined;

const window = () => ({ from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 86_400_000) });

/** Every method a door calls on a caller's behalf, with the rule that guards it. */
const CALLER_METHODS: Partial<Record<ServiceName, Record<string, CallerMethod>>> = {
  accounts: {
    create: { scopes: [], role: 'admin', subject: false, call: (s, p) => s.accounts.create(p, { name: 'Sneaky', credits: 1000 }) },
    view: { scopes: ['read'], subject: true, call: (s, p) => s.accounts.view(p, a.accountId) },
    viewMany: { scopes: ['read'], subject: true, call: (s, p) => s.accounts.viewMany(p, [a.accountId]), filtered: empty },
    list: { scopes: ['read'], role: 'analyst', subject: false, call: (s, p) => s.accounts.list(p, 10, null) },
    grant: { scopes: [], role: 'admin', subject: true, call: (s, p) => s.accounts.grant(p, a.accountId, 1000, 'free money') },
    setMembership: {
      scopes: [],
      role: 'admin',
      subject: true,
      call: (s, p) => s.accounts.setMembership(p, a.accountId, new Date(Date.now() + 400 * 86_400_000)),
    },
    cancelMembership: { scopes: [], role: 'admin', subject: true, call: (s, p) => s.accounts.cancelMembership(p, a.accountId) },
  },
  apiKeys: {
    create: { scopes: ['keys'], subject: true, call: (s, p) => s.apiKeys.create(p, a.accountId, 'planted') },
    list: { scopes: ['keys'], subject: true, call: (s, p) => s.apiKeys.list(p, a.accountId) },
    listForAccounts: { scopes: ['keys'], subject: true, call: (s, p) => s.apiKeys.listForAccounts(p, [a.accountId]), filtered: empty },
    revoke: { scopes: ['keys'], subject: true, call: (s, p) => s.apiKeys.revoke(p, a.keyId) },
  },
  sessions: {
    createLoginLink: { scopes: [], role: 'admin', subject: true, call: (s, p) => s.sessions.createLoginLink(p, a.accountId) },
  },
  jobs: {
    forCaller: { scopes: ['read'], subject: true, call: (s, p) => s.jobs.forCaller(p, a.jobId) },
    finishedTranscription: { scopes: ['read'], subject: true, call: (s, p) => s.jobs.finishedTranscription(p, a.transcriptionId) },
    started: { scopes: [], subject: true, call: (s, p) => s.jobs.started(p, a.jobId) },
    list: { scopes: ['read'], subject: false, call: (s, p) => s.jobs.list(p, 10, null) },
    many: { scopes: ['read'], subject: true, call: (s, p) => s.jobs.many(p, [a.jobId]), filtered: empty },
    cancel: { scopes: ['transcribe'], subject: true, call: (s, p) => s.jobs.cancel(p, a.jobId) },
  },
  jobUpdates: {
    watch: {
      scopes: ['read'],
      subject: true,
      call: async (s, p) => {
        const watch = await s.jobUpdates.watch(p, a.jobId);
        await watch.return?.();
        return watch;
      },
    },
  },
  creditHistory: {
    list: { scopes: ['read'], subject: true, call: (s, p) => s.creditHistory.list(p, { accountId: a.accountId }) },
    exportCsv: { scopes: ['read'], subject: true, call: (s, p) => s.creditHistory.exportCsv(p, { accountId: a.accountId }) },
    byTask: { scopes: ['read'], subject: false, call: (s, p) => s.creditHistory.byTask(p, 10, null) },
    usage: { scopes: ['read'], subject: false, call: (s, p) => s.creditHistory.usage(p, { ...window(), groupBy: 'DAY', by: 'OPERATION' }) },
    forJobs: { scopes: ['read'], subject: true, call: (s, p) => s.creditHistory.forJobs(p, [a.jobId]), filtered: empty },
    usageOfAccounts: {
      scopes: ['read'],
      subject: true,
      call: (s, p) => s.creditHistory.usageOfAccounts(p, [a.accountId], window()),
      filtered: empty,
    },
  },
  parse: {
    parse: { scopes: ['parse'], subject: false, call: (s, p) => s.parse.parse(p, { url: 'http://127.0.0.1:9/nothing.mp4' }) },
  },
  transcription: {
    transcribe: {
      scopes: ['transcribe'],
      subject: false,
      call: (s, p) => s.transcription.transcribe(p, { mediaUrl: 'http://127.0.0.1:9/nothing.mp3' }),
    },
    start: {
      scopes: ['transcribe'],
      subject: false,
      call: (s, p) => s.transcription.start(p, { mediaUrl: 'http://127.0.0.1:9/nothing.mp3' }),
    },
  },
  webhooks: {
    secretFor: { scopes: ['keys'], subject: false, call: (s, p) => s.webhooks.secretFor(p) },
    rotateSecret: { scopes: ['keys'], subject: false, call: (s, p) => s.webhooks.rotateSecret(p) },
    attemptsOf: {
      scopes: ['read'],
      subject: true,
      call: (s, p) => s.webhooks.attemptsOf(p, { id: a.jobId, accountId: a.accountId, input: { webhookUrl: 'https://example.com/hook' } }),
      filtered: empty,
      scopeFilters: true,
    },
    attemptsForJobs: { scopes: ['read'], subject: true, call: (s, p) => s.webhooks.attemptsForJobs(p, [a.jobId]), filtered: empty },
  },
};

/** Methods that take no caller, and why no door can reach another's resources through them. */
const SYSTEM_METHODS: Partial<Record<ServiceName, Record<string, string>>> = {
  accounts: { principalForOidc: 'authentication: turns a verified OpenID Connect identity into its caller' },
  apiKeys: {
    authenticate: 'authentication: turns a presented key into its caller',
    callerRevoked: "authentication: the refusal of a key found revoked by a statement's own check",
    forgetKey: "authentication: drops a revoked key from this instance's cache",
    close: 'the process stopping',
  },
  auth: {
    fromToken: 'authentication: who a bearer token names',
    fromSession: 'authentication: who a session id names',
  },
  sessions: {
    peek: 'sign-in: which account a login link (the credential itself) would sign in',
    start: 'sign-in: spends a login link (the credential itself)',
    startWithIdToken: 'sign-in: spends a verified OpenID Connect ID token (the credential itself)',
    endable: 'sign-in: the session a cookie names, for the edge to check its CSRF token',
    resolve: 'authentication: who a session id names',
    end: 'sign-out: ends the session whose id (the credential itself) is presented',
  },
  jobs: {
    sweep: "the sweeper: fails jobs past their deadline, whoever's they are",
    interruptRunning: 'the process stopping',
  },
  streams: {
    open: 'a stream URL: the sealed token is the credential; the parse’s key (not revoked) and membership are checked again at each open',
  },
  transcription: {
    price: 'a price list: reads nothing',
    tempUsage: 'the process-wide temp disk figures, for metrics and tests: no caller’s data',
    runJob: 'the queue worker: runs a job already held for its owner',
  },
  webhooks: {
    jobEnded: 'the task runner: queues the event of a job that ended',
    deliver: 'the queue worker: delivers an event already queued for its job',
  },
  ledger: {
    grant: 'reached by callers only through accounts.grant (admins)',
    balance: 'the task ledger: a refusal’s details, with the task’s own account',
    availableOfJob: 'a refusal’s details, for the task ledger',
  },
  tasks: {
    openJob: 'the task runner, after the task’s own policy',
    extendHold: 'the task runner',
    succeed: 'the task runner',
    settlement: 'the task runner',
    fail: 'the task runner',
    markRunning: 'the queue worker',
    requeue: 'the queue worker',
    status: 'the task runner',
    setProgress: 'the task runner',
    sweepExpired: 'the sweeper',
    findByIdempotencyKey: 'the task runner, with the caller’s own account',
  },
};

/**
 * The public methods of each service, as its class declares them to a door: the `Services`
 * interface (src/modules/services.ts) names each service's class, and the class's declaration in
 * src/modules/ lists its methods (private helpers are not a door's to call). Read from the source
 * with TypeScript's parser, without type-checking.
 */
function publicMethods(): Map<string, string[]> {
  const parse = (path: string) => ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const classes = new Map<string, ts.ClassDeclaration>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts'))
        for (const st of parse(path).statements) if (ts.isClassDeclaration(st) && st.name) classes.set(st.name.text, st);
    }
  };
  walk(join(ROOT, 'src/modules'));
  const services = parse(join(ROOT, 'src/modules/services.ts')).statements.find(
    (st): st is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(st) && st.name.text === 'Services',
  )!;
  const result = new Map<string, string[]>();
  for (const member of services.members) {
    if (!ts.isPropertySignature(member) || !member.type || !ts.isTypeReferenceNode(member.type)) continue;
    const declaration = classes.get(member.type.typeName.getText());
    if (!declaration) continue;
    const methods = declaration.members
      .filter((m): m is ts.MethodDeclaration => ts.isMethodDeclaration(m) && !!m.name && ts.isIdentifier(m.name))
      .filter((m) => !(ts.getCombinedModifierFlags(m) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)))
      .map((m) => (m.name as ts.Identifier).text);
    result.set(member.name.getText(), [...new Set(methods)].sort());
  }
  return result;
}

/** What a call could change, read whole: every row that holds money, power or work. */
async function everything(): Promise<string> {
  const tables = [
    'account',
    'api_key',
    'membership',
    'credit_balance',
    'credit_entry',
    'job',
    'webhook_secret',
    'login_link',
    'account_session',
  ];
  const parts: string[] = [];
  for (const t of tables) {
    const rows = await h.sql<{ row: unknown }>(`select to_jsonb(x) - 'last_used_at' as row from ${t} x`);
    parts.push(`${t}: ${JSON.stringify(rows.map((r) => JSON.stringify(r.row)).sort())}`);
  }
  return parts.join('\n');
}

/** Calls `method` as `p` and checks it was refused: it threw one of `codes` (or, for a filtered read, answered nothing of A), and changed nothing. */
async function expectRefused(method: CallerMethod, p: Principal, codes: string[], filters = !!method.filtered): Promise<void> {
  const before = await everything();
  let answer: unknown;
  let error: unknown;
  try {
    answer = await method.call(h.services, p);
  } catch (err) {
    error = err;
  }
  if (error === undefined) {
    if (!filters || !method.filtered) throw new Error(`it acted: answered ${JSON.stringify(answer)?.slice(0, 300)}`);
    expect(method.filtered(answer)).toBe(true);
  } else {
    if (!isAppError(error)) throw error;
    expect(codes).toContain(error.code);
  }
  expect(await everything()).toBe(before);
}

beforeAll(async () => {
  h = await createHarness();
  const owner = await h.account({ credits: 10, member: true });
  const stranger = await h.account({ credits: 10, member: true });
  // A queued transcription, and a finished one, both with a webhook.
  const job = (status: 'QUEUED' | 'SUCCEEDED') =>
    factories(h).job(owner, {
      operation: 'TRANSCRIBE',
      status,
      input: { webhookUrl: 'https://example.com/hook' },
      result: { text: 'hello', segments: [] },
      deadlineSeconds: 600,
    });
  const jobId = await job('QUEUED');
  const transcriptionId = await job('SUCCEEDED');
  a = { accountId: owner.accountId, keyId: owner.keyId, jobId, transcriptionId };
  b = { accountId: stranger.accountId };
  // A's webhook secret and a login link exist already, so that reads which make one on first use show as changes.
  await h.services.webhooks.secretFor(caller(a.accountId)).catch(() => {});
}, 60_000);

afterAll(() => h?.close());

describe('policies: every service method guards itself', () => {
  it('lists every public method of every service, each either guarded or taking no caller for a stated reason', () => {
    const unlisted: string[] = [];
    const stale: string[] = [];
    const declared = publicMethods();
    expect([...declared.keys()]).toEqual(
      expect.arrayContaining(['accounts', 'apiKeys', 'jobs', 'ledger', 'parse', 'transcription', 'webhooks']),
    );
    for (const [name, methods] of declared) {
      if (['notifications', 'metrics'].includes(name)) continue;
      const guarded = CALLER_METHODS[name as ServiceName] ?? {};
      const system = SYSTEM_METHODS[name as ServiceName] ?? {};
      for (const m of methods) if (!(m in guarded) && !(m in system)) unlisted.push(`${name}.${m}`);
      for (const m of [...Object.keys(guarded), ...Object.keys(system)]) if (!methods.includes(m)) stale.push(`${name}.${m}`);
    }
    expect({ unlisted, stale }).toEqual({ unlisted: [], stale: [] });
  });

  const cases = Object.entries(CALLER_METHODS).flatMap(([service, methods]) =>
    Object.entries(methods ?? {}).map(([name, method]) => ({ id: `${service}.${name}`, method })),
  );

  describe.each(cases)('$id', ({ method }) => {
    for (const scope of method.scopes as string[]) {
      it(`refuses A's own caller without the ${scope} scope, and changes nothing`, async () => {
        const without = API_KEY_SCOPES.filter((s) => s !== scope);
        await expectRefused(method, caller(a.accountId, without), ['FORBIDDEN'], !!method.scopeFilters);
      });
    }
    if (method.role) {
      it(`refuses an ordinary holder with every scope (${method.role}s' only), and changes nothing`, async () => {
        await expectRefused(method, caller(a.accountId), ['FORBIDDEN'], false);
        if (method.role === 'admin') {
          await expectRefused(method, caller(a.accountId, API_KEY_SCOPES, { roles: new Set(['analyst']) }), ['FORBIDDEN'], false);
        }
      });
      it('lets the operator act', async () => {
        await expect(method.call(h.services, OPERATOR)).resolves.toBeDefined();
      });
    }
    if (method.subject && !method.role) {
      it("refuses another account's caller with every scope on A's resources, and changes nothing", async () => {
        await expectRefused(method, caller(b.accountId), ['FORBIDDEN', 'NOT_FOUND']);
      });
    }
  });
});
