import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { ConfigError, type Config, type ConfigProblem, type ConfigReading, type Settings } from './config.js';

/**
 * What only this machine can add to the settings read from the environment. Reading the
 * configuration never does this; the processes that need it call it once at startup (serve, worker,
 * the commands that open the services, config check):
 * - outside production an unset API_KEY_PEPPER is generated once and kept beside the data, so keys
 *   survive restarts (this writes MEDIAGATE_DATA_DIR/api-key-pepper);
 * - when no transcription provider is named or configured, the offline recogniser if it is
 *   installed (this looks on PATH).
 */
export function prepareConfig(settings: Settings): Config {
  const prepared = prepare(settings);
  if ('problem' in prepared) throw new ConfigError([prepared.problem]);
  return prepared.config;
}

/** A reading with its settings prepared as prepareConfig does (what `config check` prints). */
export interface PreparedReading extends Omit<ConfigReading, 'settings'> {
  config: Config | null;
}

export function prepareReading(reading: ConfigReading): PreparedReading {
  const { settings, ...rest } = reading;
  if (!settings) return { ...rest, config: null };
  const prepared = prepare(settings);
  const variables = { ...rest.variables, TRANSCRIBE_PROVIDERS: prepared.transcribeProviders };
  if ('problem' in prepared) return { ...rest, variables, problems: [...rest.problems, prepared.problem], config: null };
  return { ...rest, variables, config: prepared.config };
}

function prepare(settings: Settings): { transcribeProviders: readonly string[] } & ({ config: Config } | { problem: ConfigProblem }) {
  const transcribeProviders = settings.transcribeProviders ?? (installed(settings.pocketsphinxPath) ? ['local'] : []);
  let apiKeyPepper = settings.apiKeyPepper;
  if (!apiKeyPepper) {
    try {
      apiKeyPepper = localPepper(settings.dataDir);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      return {
        transcribeProviders,
        problem: { field: 'API_KEY_PEPPER', message: `unset, and no generated one could be kept in MEDIAGATE_DATA_DIR (${reason})` },
      };
    }
  }
  return { transcribeProviders, config: Object.freeze({ ...settings, apiKeyPepper, transcribeProviders }) };
}

/** Whether a command can be run: an absolute path that exists, or a name found on PATH. */
function installed(command: string): boolean {
  if (isAbsolute(command)) return existsSync(command);
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, command)));
}

/** The pepper kept in the data directory, made on first use. */
function localPepper(dataDir: string): string {
  const file = join(dataDir, 'api-key-pepper');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const pepper = randomBytes(32).toString('base64url');
  writeFileSync(file, `${pepper}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return pepper;
}
