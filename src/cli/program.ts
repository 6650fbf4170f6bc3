import 'reflect-metadata';
import { Command, InvalidArgumentError } from 'commander';
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { prepareConfig } from '../local-config.js';
import { AppError } from '../errors.js';
import { createLogger } from '../logger.js';
import { shutdownTelemetry, startTelemetry } from '../telemetry.js';
import { OPERATOR } from '../modules/principal.js';
import type { Services } from '../modules/services.js';
import { registerClientCommands } from './client-commands.js';

/**
 * The server side (database, ORM, GraphQL, providers) is loaded only by the commands that use it,
 * so the client commands start fast and work whatever the server code needs.
 */
const serverSide = async () => {
  const [database, services, queue, server] = await Promise.all([
    import('../db/database.js'),
    import('../root.js'),
    import('../modules/jobs/job-queue.js'),
    import('../server.js'),
  ]);
  return { ...database, ...services, ...queue, ...server };
};

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command('mediagate')
  .description('mediagate operator commands')
  // The Node it runs on too: the project's own, whichever started the command (bin/mediagate.js).
  .version(`mediagate ${version} (Node ${process.version})`, '-V, --version')
  .option('--json', 'print one JSON object instead of text')
  .showHelpAfterError();

const int = (label: string) => (v: string) => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError(`${label} must be a whole number.`);
  return Number(v);
};

/** Runs one command against the database (through a running server's embedded database when there is one). */
async function withServices<T>(fn: (s: Services, config: Config) => Promise<T>): Promise<void> {
  const config = prepareConfig(loadConfig());
  const log = createLogger({ logLevel: process.env.LOG_LEVEL ?? 'warn' });
  const { composeOperator } = await serverSide();
  const operator = await composeOperator(config, log);
  try {
    print(await fn(operator.services, config));
  } finally {
    await operator.close();
  }
}

function print(out: unknown): void {
  if (program.opts().json) {
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  process.stdout.write(`${human(out)}\n`);
}

function human(out: unknown, indent = ''): string {
  if (Array.isArray(out)) return out.length ? out.map((o) => human(o, indent)).join('\n\n') : `${indent}(none)`;
  if (out && typeof out === 'object' && !(out instanceof Date)) {
    return Object.entries(out)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) =>
        v && typeof v === 'object' && !(v instanceof Date)
          ? `${indent}${k}:\n${human(v, `${indent}  `)}`
          : `${indent}${k}: ${v instanceof Date ? v.toISOString() : v}`,
      )
      .join('\n');
  }
  return `${indent}${String(out)}`;
}

const keyView = (k: {
  id: string;
  accountId: string;
  name: string;
  last4: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}) => ({
  id: k.id,
  accountId: k.accountId,
  name: k.name,
  last4: k.last4,
  scopes: k.scopes,
  createdAt: k.createdAt,
  lastUsedAt: k.lastUsedAt,
  revokedAt: k.revokedAt,
});

program
  .command('serve')
  .description('serve the HTTP API (GraphQL at /graphql, REST at /api/*)')
  .action(async () => {
    const config = prepareConfig(loadConfig());
    // Before the server side loads: the instrumentations patch its modules as they are imported.
    await startTelemetry(config);
    const { startServer, stopOnSignals } = await serverSide();
    const server = await startServer(config);
    // The last request's spans are flushed once the server has stopped.
    stopOnSignals({ stop: () => server.stop().then(shutdownTelemetry) }, server.services.log);
  });

program
  .command('worker')
  .description('work queued transcriptions without serving HTTP (serve works them too)')
  .action(async () => {
    const config = prepareConfig(loadConfig());
    if (config.workerConcurrency === 0)
      throw new ConfigError(['WORKER_CONCURRENCY: a worker needs at least 1 (0 is for `serve` beside separate workers)']);
    const log = createLogger(config);
    const { startWorker, stopOnSignals } = await serverSide();
    stopOnSignals(await startWorker(config, log), log);
  });

program
  .command('migrate')
  .description('apply pending database migrations')
  .action(async () => {
    const config = loadConfig();
    const { openProductDatabase, migrate } = await serverSide();
    const db = await openProductDatabase(config);
    try {
      print({ applied: await migrate(db.orm, { lock: !db.embedded }) });
    } finally {
      await db.close();
    }
  });

const account = program.command('account').description('accounts');
account
  .command('create')
  .description('create an account')
  .requiredOption('--name <name>', 'account name')
  .option('--email <email>', 'contact email')
  .option('--credits <n>', 'initial credits', int('credits'))
  .option('--membership-days <d>', 'start a membership for D days', int('membership-days'))
  .option('--role <role...>', 'analyst or admin: may read across accounts')
  .action((o: { name: string; email?: string; credits?: number; membershipDays?: number; role?: string[] }) =>
    withServices((s) =>
      s.accounts.create(OPERATOR, { name: o.name, email: o.email, credits: o.credits, membershipDays: o.membershipDays, roles: o.role }),
    ),
  );

account
  .command('login-link <accountId>')
  .description('a single-use link that signs the account in to /account, for installs without an identity provider')
  .action((accountId: string) =>
    withServices(async (s) => {
      const link = await s.sessions.createLoginLink(OPERATOR, accountId);
      return { url: link.url, expiresAt: link.expiresAt };
    }),
  );

const membership = program.command('membership').description('memberships');
membership
  .command('set <accountId>')
  .description('activate or extend the membership until a date')
  .requiredOption('--until <isoDate>', 'end of the paid period, ISO-8601')
  .action((accountId: string, o: { until: string }) =>
    withServices((s) => s.accounts.setMembership(OPERATOR, accountId, new Date(o.until))),
  );
membership
  .command('cancel <accountId>')
  .description('cancel the membership now')
  .action((accountId: string) => withServices((s) => s.accounts.cancelMembership(OPERATOR, accountId)));

program
  .command('credits')
  .description('credits')
  .command('grant <accountId> <amount>')
  .description('add credits to an account')
  .option('--reason <text>', 'why, for the ledger')
  .action((accountId: string, amount: string, o: { reason?: string }) =>
    withServices(async (s) => {
      await s.accounts.view(OPERATOR, accountId);
      if (!/^\d+$/.test(amount))
        throw new AppError('INVALID_INPUT', 'amount must be a positive whole number.', { amount: 'must be a positive integer' });
      const available = await s.accounts.grant(OPERATOR, accountId, Number(amount), o.reason ?? null);
      return { accountId, granted: Number(amount), available };
    }),
  );

const key = program.command('key').description('API keys');
key
  .command('create <accountId>')
  .description('create an API key (the secret is printed once)')
  .option('--name <name>', 'a label for the key', 'default')
  .option('--scope <scope...>', 'limit the key to these scopes (parse, transcribe, read, keys)')
  .action((accountId: string, o: { name: string; scope?: string[] }) =>
    withServices(async (s) => {
      await s.accounts.view(OPERATOR, accountId);
      const created = await s.apiKeys.create(OPERATOR, accountId, o.name, o.scope);
      return { ...keyView(created.apiKey), key: created.key };
    }),
  );
key
  .command('revoke <keyId>')
  .description('revoke an API key; it stops working on the next request')
  .action((keyId: string) => withServices(async (s) => keyView(await s.apiKeys.revoke(OPERATOR, keyId))));
key
  .command('list <accountId>')
  .description("list an account's keys")
  .action((accountId: string) =>
    withServices(async (s) => {
      await s.accounts.view(OPERATOR, accountId);
      const keys = (await s.apiKeys.list(OPERATOR, accountId)).map(keyView);
      return program.opts().json ? { keys } : keys;
    }),
  );

program
  .command('config')
  .description('the configuration')
  .command('check')
  .description('validate the configuration as serve would, print it with secrets masked, check engines and services')
  .action(async () => {
    const { configCheck } = await import('./config-check.js');
    process.exitCode = await configCheck(Boolean(program.opts().json));
  });

registerClientCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  const json = program.opts().json;
  let code = 'INTERNAL_ERROR';
  let message = err instanceof Error ? err.message : String(err);
  let details: unknown;
  if (err instanceof AppError) ({ code, message, details } = err);
  else if (err instanceof ConfigError) code = 'INVALID_CONFIGURATION';
  if (json) process.stdout.write(`${JSON.stringify({ error: { code, message, ...(details ? { details } : {}) } })}\n`);
  else process.stderr.write(`mediagate: ${message}${details ? `\n${JSON.stringify(details, null, 2)}` : ''}\n`);
  process.exit(err instanceof AppError ? 1 : 2);
});
