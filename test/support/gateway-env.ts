import { TEST_PEPPER } from './harness.js';

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
