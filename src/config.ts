import type { z } from 'zod';
import { envSchema, type Env, type Variable } from './config/env.js';
import { CROSS_FIELD_RULES } from './config/rules.js';
import { settingsOf } from './config/settings.js';

/**
 * The configuration: every environment variable the service reads (src/config/env-*.ts, by section),
 * the rules between them (rules.ts), and the settings they give (settings.ts). Read once at start-up.
 */

/**
 * Variables whose whole value is a secret: `mediagate config check` prints them masked. Every URL-valued
 * variable also has its password and query values masked (DATABASE_URL, REDIS_URL, ...).
 */
export const SECRET_VARIABLES: readonly Variable[] = [
  'API_KEY_PEPPER',
  'COBALT_API_KEY',
  'OPENAI_API_KEY',
  'DEEPGRAM_API_KEY',
  'ASSEMBLYAI_API_KEY',
  'METRICS_TOKEN',
  'OTEL_EXPORTER_OTLP_HEADERS',
];

/** The name of every variable the service reads (the container files and the README are checked against it). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(envSchema.shape));

/** One variable as the configuration doc shows it. */
export interface VariableDoc {
  name: string;
  description: string;
  /** What happens when it is unset, for a variable without a default. */
  unset: string | null;
  /** The default, as the variable would be written (`undefined`: none). */
  default: string | undefined;
  secret: boolean;
}

/** Every variable with what the schema says of it, in the schema's order. */
export function describeVariables(): VariableDoc[] {
  return Object.entries(envSchema.shape).map(([name, schema]) => {
    const meta = (schema.meta() ?? {}) as { description?: string; unset?: string };
    const given = schema.def.type === 'default' ? (schema.def as { defaultValue: unknown }).defaultValue : undefined;
    return {
      name,
      description: meta.description ?? '',
      unset: meta.unset ?? null,
      default: given === undefined ? undefined : Array.isArray(given) ? given.join(',') : String(given),
      secret: (SECRET_VARIABLES as readonly string[]).includes(name),
    };
  });
}

/** One thing wrong with the configuration: the variable concerned and what is wrong (never its value). */
export interface ConfigProblem {
  field: string;
  message: string;
}

export class ConfigError extends Error {
  /** `FIELD: message` lines. */
  readonly problems: string[];
  readonly issues: readonly ConfigProblem[];
  /** Each problem as a ConfigProblem or as a `FIELD: message` line. */
  constructor(problemsFound: readonly (ConfigProblem | string)[]) {
    const issues = problemsFound.map((p) =>
      typeof p === 'string' ? { field: p.split(':')[0], message: p.slice(p.indexOf(':') + 1).trim() } : p,
    );
    const problems = issues.map((p) => `${p.field}: ${p.message}`);
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
    this.issues = issues;
  }
}

/** What the environment says, read without touching the disk or PATH (readConfig, loadConfig). */
export type Settings = Readonly<ReturnType<typeof settingsOf>>;

/**
 * What the processes run with: the settings, plus the two things only the machine can say, added once
 * at startup by prepareConfig (local-config.ts): the pepper kept beside the data when API_KEY_PEPPER
 * is unset, and the offline recogniser when no transcription provider is named or configured.
 */
export type Config = Readonly<
  Omit<Settings, 'apiKeyPepper' | 'transcribeProviders'> & { apiKeyPepper: string; transcribeProviders: readonly string[] }
>;

/** What one reading of the environment found: the settings when they are valid, and every problem. */
export interface ConfigReading {
  settings: Settings | null;
  problems: ConfigProblem[];
  /** Each variable's effective value (defaults applied); an invalid one keeps the text given. */
  variables: Partial<Record<Variable, unknown>>;
  invalid: ReadonlySet<Variable>;
}

/** Reads and validates the environment; lists every problem at once. No side effects: see prepareConfig. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Settings {
  const reading = readConfig(env);
  if (!reading.settings) throw new ConfigError(reading.problems);
  return reading.settings;
}

/**
 * Numbers read from the environment, said in an operator's words ("must be a whole number") rather
 * than zod's ("expected int, received number"); null keeps zod's message. Never the value given.
 */
function numberProblem(issue: z.core.$ZodRawIssue): string | null {
  if (issue.code === 'invalid_type' && issue.expected === 'number') return 'must be a number';
  if (issue.code === 'invalid_type' && issue.expected === 'int') return 'must be a whole number';
  if (issue.code === 'too_small' && issue.origin === 'number')
    return `must be ${issue.inclusive ? 'at least' : 'more than'} ${issue.minimum}`;
  if (issue.code === 'too_big' && issue.origin === 'number') return `must be ${issue.inclusive ? 'at most' : 'less than'} ${issue.maximum}`;
  return null;
}

/**
 * One pass over every variable, then every rule between them on the variables that are valid, so the
 * first run lists all problems. `mediagate config check` prints the reading; loadConfig throws on it.
 */
export function readConfig(env: NodeJS.ProcessEnv = process.env): ConfigReading {
  const raw = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const problems: ConfigProblem[] = [];
  const invalid = new Set<Variable>();
  const variables: Partial<Record<Variable, unknown>> = {};
  for (const name of Object.keys(envSchema.shape) as Variable[]) {
    const parsed = envSchema.shape[name].safeParse(raw[name], { error: numberProblem });
    if (parsed.success) {
      variables[name] = parsed.data;
    } else {
      invalid.add(name);
      variables[name] = raw[name];
      for (const issue of parsed.error.issues) problems.push({ field: [name, ...issue.path].join('.'), message: issue.message });
    }
  }
  const e = variables as Env;
  for (const rule of CROSS_FIELD_RULES) {
    if (rule.reads.some((name) => invalid.has(name))) continue;
    if (rule.broken(e)) problems.push({ field: rule.field, message: rule.message });
  }
  if (problems.length) return { settings: null, problems, variables, invalid };
  const settings = settingsOf(e, (name) => name in raw);
  Object.assign(variables, {
    MEDIAGATE_DATA_DIR: settings.dataDir,
    GRAPHQL_INTROSPECTION: settings.graphql.introspection,
    PUBLIC_URL: settings.publicUrl,
    ...(settings.transcribeProviders ? { TRANSCRIBE_PROVIDERS: settings.transcribeProviders } : {}),
  } satisfies Partial<Record<Variable, unknown>>);
  return { settings: Object.freeze(settings), problems, variables, invalid };
}
