import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { migrate, openDatabase, type Database } from './db/database.js';
import { createLogger } from './logger.js';
import { JobQueue } from './modules/jobs/job-queue.js';
import { createServices, startWorkers, type Services } from './services.js';

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  db: Database;
  url: string;
  stop(): Promise<void>;
}

/** Opens the database, migrates, starts HTTP and the sweeper. What `mediagate serve` runs. */
export async function startServer(config: Config, log: Logger = createLogger(config)): Promise<RunningServer> {
  const db = await openDatabase(config, { announce: true });
  const applied = await migrate(db.orm);
  if (applied.length) log.info({ migrations: applied }, 'database migrated');
  // Queued transcriptions: durable in PostgreSQL, worked by every serving instance.
  const queue = new JobQueue(db.clientUrl, log, config.webhooks.retryDelaySeconds);
  await queue.start();
  const services = createServices(config, db.orm, log, queue);
  await startWorkers(services, queue);
  const app = await buildApp({ services, orm: db.orm });
  const sweep = () =>
    services.jobControl.sweep().then(
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
    async stop() {
      clearInterval(sweeper);
      await app.close();
      await queue.stop();
      await services.close();
      await db.close();
    },
  };
}
