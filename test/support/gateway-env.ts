import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GatewayProcess } from '../model/gateway-process.js';
import { createHarness, TEST_PEPPER, type Harness } from './harness.js';
import type { TestDatabaseKind } from './test-database.js';

/** How long a gateway started by a test waits: short, so that deadlines and sweeps happen within a run. */
export interface GatewayTiming {
  parseTimeoutSeconds: number;
  transcribeTimeoutSeconds: number;
  sweepIntervalSeconds: number;
}

/**
 * A gateway process a test starts on its database and measures from outside (probe and stream
 * memory): the test's pepper, the fake site allowed, the builtin reader, the machine's ffmpeg, and
 * rate limits (per key, address and account) out of the way. What a test adds it spreads after.
 */
export function gatewayProcessBaseEnv(options: {
  databaseUrl: string;
  dataDir: string;
  site: { hostPort: string };
}): Record<string, string> {
  return {
    NODE_ENV: 'test',
    API_KEY_PEPPER: TEST_PEPPER,
    DATABASE_URL: options.databaseUrl,
    MEDIAGATE_DATA_DIR: options.dataDir,
    FETCH_ALLOW_HOSTS: options.site.hostPort,
    PARSE_PROVIDERS: 'builtin',
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_IP_PER_MINUTE: '1000000',
    RATE_LIMIT_ACCOUNT_PER_MINUTE: '1000000',
    FFMPEG_PATH: process.env.FFMPEG_PATH ?? 'ffmpeg',
    FFPROBE_PATH: process.env.FFPROBE_PATH ?? 'ffprobe',
  };
}

/** A gateway process a test measures from outside, and the harness beside it on the same database; closed together. */
export interface MeasuredGateway {
  /** The operator's side, in the test's process: accounts and the ledger. */
  h: Harness;
  gateway: GatewayProcess;
  close(): Promise<void>;
}

/**
 * Starts a harness on a database of its own, then a gateway process on that database with the base
 * settings above (its data directory a new temporary one) allowed to fetch from `site`.
 */
export async function measuredGateway(site: { hostPort: string }, database?: TestDatabaseKind): Promise<MeasuredGateway> {
  const h = await createHarness({}, undefined, { database });
  const dataDir = mkdtempSync(join(tmpdir(), 'mediagate-measured-'));
  const closeHarness = async () => {
    await h.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const gateway = await GatewayProcess.start({
      ...gatewayProcessBaseEnv({ databaseUrl: h.clientUrl, dataDir, site }),
      // The embedded database is served by the harness's process, one statement at a time: one connection, and no job workers polling it.
      DATABASE_POOL_SIZE: h.database.embedded ? '1' : '4',
      WORKER_CONCURRENCY: '0',
    });
    return {
      h,
      gateway,
      async close() {
        await gateway.stop();
        await closeHarness();
      },
    };
  } catch (err) {
    await closeHarness();
    throw err;
  }
}

/**
 * The settings of a whole gateway process a test starts on its own database (the ledger model's
 * instances, the cluster's gateways and worker): the base above, the fake OpenAI and the test's
 * timings. What a world adds (Redis, pool sizes, workers) it spreads after.
 */
export function gatewayProcessEnv(options: {
  databaseUrl: string;
  dataDir: string;
  site: { hostPort: string };
  openai: { baseUrl: string };
  timing: GatewayTiming;
}): Record<string, string> {
  return {
    ...gatewayProcessBaseEnv(options),
    TRANSCRIBE_PROVIDERS: 'openai',
    OPENAI_BASE_URL: options.openai.baseUrl,
    PARSE_TIMEOUT_SECONDS: String(options.timing.parseTimeoutSeconds),
    TRANSCRIBE_TIMEOUT_SECONDS: String(options.timing.transcribeTimeoutSeconds),
    SWEEP_INTERVAL_SECONDS: String(options.timing.sweepIntervalSeconds),
  };
}
