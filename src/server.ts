import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { createLogger } from './logger.js';
import type { JobQueue } from './modules/jobs/job-queue.js';
import { composeProcess, createHttpApp, type Services } from './root.js';

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  db: Database;
  url: string;
  /** The clean stop (see `shutdown`). */
  stop(): Promise<void>;
}

/** A `mediagate worker`: the queue's workers without HTTP. */
export interface RunningWorker {
  services: Services;
  db: Database;
  stop(): Promise<void>;
}

/** Past the grace period: how long interrupted work may take to answer its callers and go back to the queue. */
const INTERRUPT_MS = 2000;

/** Opens the database, migrates, starts HTTP and the sweeper. What `mediagate serve` runs. */
export async function startServer(config: Config, log: Logger = createLogger(config)): Promise<RunningServer> {
  const { db, queue, services } = await composeProcess(config, log, { announce: true });
  const app = await createHttpApp(services, db.orm);
  const sweep = () =>
    services.jobs.sweep().then(
      (n) => n && log.warn({ jobs: n }, 'failed jobs past their deadline and released their holds'),
      (err) => log.error({ err }, 'sweep failed'),
    );
  // Once at start-up: jobs a crashed process left behind are released without waiting a whole interval.
  await sweep();
  const sweeper = setInterval(sweep, config.sweepIntervalMs);
  sweeper.unref();
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
  log.info({ url, database: db.embedded ? `embedded (${config.dataDir})` : 'postgresql' }, 'mediagate is listening');
  return {
    app,
    services,
    db,
    url,
    stop() {
      clearInterval(sweeper);
      return shutdown({ config, log, app, queue, services, db });
    },
  };
}

/** Opens the database, migrates and works queued transcriptions and webhook deliveries. What `mediagate worker` runs. */
export async function startWorker(config: Config, log: Logger = createLogger(config)): Promise<RunningWorker> {
  const { db, queue, services } = await composeProcess(config, log);
  log.info({ concurrency: config.workerConcurrency }, 'mediagate worker is waiting for queued transcriptions');
  return { services, db, stop: () => shutdown({ config, log, queue, services, db }) };
}

/**
 * The clean stop of `serve` and `worker`: take nothing new (HTTP answers 503 and closes idle
 * connections, the queue fetches nothing), let the work in progress finish within
 * SHUTDOWN_GRACE_SECONDS, then interrupt what is left (a queued transcription goes back to the queue
 * with its hold, a caller still waiting is answered 503 and its hold released), and close the
 * database last. With nothing long-running, it ends as soon as the last request is answered.
 */
async function shutdown(parts: {
  config: Config;
  log: Logger;
  app?: FastifyInstance;
  queue: JobQueue;
  services: Services;
  db: Database;
}): Promise<void> {
  const { config, log, app, queue, services, db } = parts;
  const http = app?.close() ?? Promise.resolve();
  const finished = Promise.all([http, queue.drain()]);
  if (!(await settlesWithin(finished, config.shutdownGraceMs))) {
    const interrupted = services.jobs.interruptRunning();
    log.warn({ interrupted, graceSeconds: config.shutdownGraceMs / 1000 }, 'grace period over: interrupting the work still running');
    if (!(await settlesWithin(finished, INTERRUPT_MS))) {
      // Whatever still holds a connection (a response that will not end) is cut.
      app?.server.closeAllConnections();
      await settlesWithin(http, INTERRUPT_MS);
    }
  }
  // A webhook delivery still running now has its pg-boss job failed, and is retried later.
  await queue.stop(1000);
  await services.close();
  await db.close();
}

/** Whether the promise settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Stops cleanly on the first SIGTERM or SIGINT and exits 0 (1 if the stop failed); a second signal
 * exits at once, for an operator who will not wait for the grace period.
 */
export function stopOnSignals(running: { stop(): Promise<void> }, log: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    const started = Date.now();
    running.stop().then(
      () => {
        log.info({ ms: Date.now() - started }, 'stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
