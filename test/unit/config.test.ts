import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_VARIABLES, ConfigError, loadConfig, readConfig, SECRET_VARIABLES } from '../../src/config.js';
import { prepareConfig } from '../../src/local-config.js';

describe('configuration', () => {
  it('lists every problem at once', () => {
    let err: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        PARSE_PROVIDERS: 'builtin,nope',
        FETCH_ALLOW_HOSTS: 'no-port',
        OPENAI_BASE_URL: 'ftp://x',
        DATABASE_URL: 'mysql://x',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join('\n');
    for (const name of ['PORT', 'PARSE_PROVIDERS', 'FETCH_ALLOW_HOSTS', 'OPENAI_BASE_URL', 'DATABASE_URL'])
      expect(problems).toContain(name);
  });

  it('lists the rules between variables beside the problems of single variables, each once', () => {
    const reading = readConfig({
      NODE_ENV: 'production',
      PORT: 'x',
      OIDC_AUDIENCE: 'a',
      PARSE_PROVIDERS: 'cobalt',
      TRANSCRIBE_PROVIDERS: 'deepgram,nope',
      API_KEY_PEPPER: 'short',
    });
    expect(reading.settings).toBeNull();
    expect(reading.problems.map((p) => p.field).sort()).toEqual([
      'API_KEY_PEPPER',
      'COBALT_API_URL',
      'METRICS_TOKEN',
      'OIDC_ISSUER',
      'PORT',
      'TRANSCRIBE_PROVIDERS.1',
    ]);
    // A pepper that is too short is one problem, not also "required in production"; an invalid provider list waits.
    expect(reading.problems.find((p) => p.field === 'API_KEY_PEPPER')?.message).toMatch(/at least 32/);
    expect(() => loadConfig({ NODE_ENV: 'production', PORT: 'x' })).toThrow(/PORT[\s\S]*API_KEY_PEPPER: required when NODE_ENV=production/);
  });

  it('says what a number must be in words, never echoing the value', () => {
    const said = (env: Record<string, string>) => readConfig(env).problems.map((p) => `${p.field}: ${p.message}`);
    expect(said({ PORT: 'eighty' })).toEqual(['PORT: must be a number']);
    expect(said({ PORT: '80.5' })).toEqual(['PORT: must be a whole number']);
    expect(said({ PORT: '-1', WORKER_CONCURRENCY: '65' })).toEqual(['PORT: must be at least 0', 'WORKER_CONCURRENCY: must be at most 64']);
    expect(said({ PARSE_TIMEOUT_SECONDS: '0' })).toEqual(['PARSE_TIMEOUT_SECONDS: must be more than 0']);
  });

  it('declares every secret-looking variable secret, so config check masks it', () => {
    const secretLooking = CONFIG_VARIABLES.filter((name) => /(KEY|TOKEN|SECRET|PASSWORD|PEPPER|HEADERS)$/.test(name));
    expect(secretLooking.length).toBeGreaterThan(5);
    expect([...SECRET_VARIABLES].sort()).toEqual(expect.arrayContaining(secretLooking));
  });

  it('refuses allow-list entries that are not host:port', () => {
    expect(() => loadConfig({ FETCH_ALLOW_HOSTS: 'media.local:99999' })).toThrow(/FETCH_ALLOW_HOSTS/);
    expect(() => loadConfig({ FETCH_ALLOW_HOSTS: '[:::]:80' })).toThrow(/FETCH_ALLOW_HOSTS/);
    expect(loadConfig({ API_KEY_PEPPER: 'p'.repeat(32), FETCH_ALLOW_HOSTS: 'Media.Local:8080, [::1]:9000' }).fetchAllowHosts).toEqual([
      'media.local:8080',
      '[::1]:9000',
    ]);
  });

  it('requires a pepper in production and never invents one there', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/API_KEY_PEPPER/);
  });

  it('has the contract’s defaults', () => {
    const c = prepareConfig(loadConfig({ API_KEY_PEPPER: 'p'.repeat(32), POCKETSPHINX_PATH: '/nonexistent/pocketsphinx_continuous' }));
    expect(c).toMatchObject({
      host: '0.0.0.0',
      port: 4000,
      parseProviders: ['builtin'],
      transcribeProviders: [],
      parseTimeoutMs: 60_000,
      transcribeTimeoutMs: 3_600_000,
      sweepIntervalMs: 30_000,
      shutdownGraceMs: 30_000,
      prices: { parse: 1, transcribePerMinute: 1 },
      openai: { baseUrl: 'https://api.openai.com/v1', model: 'whisper-1' },
    });
    expect(loadConfig({ API_KEY_PEPPER: 'p'.repeat(32), OPENAI_API_KEY: 'sk' }).transcribeProviders).toEqual(['openai']);
  });

  it('falls back to the offline recogniser when it is installed and no server is configured', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const fake = join(dir, 'pocketsphinx_continuous');
    writeFileSync(fake, '#!/bin/sh\n', { mode: 0o755 });
    // Reading alone does not look: the process that starts does (prepareConfig).
    expect(loadConfig({ API_KEY_PEPPER: 'p'.repeat(32), POCKETSPHINX_PATH: fake }).transcribeProviders).toBeNull();
    expect(prepareConfig(loadConfig({ API_KEY_PEPPER: 'p'.repeat(32), POCKETSPHINX_PATH: fake })).transcribeProviders).toEqual(['local']);
    expect(
      prepareConfig(loadConfig({ API_KEY_PEPPER: 'p'.repeat(32), POCKETSPHINX_PATH: fake, TRANSCRIBE_PROVIDERS: 'openai,local' }))
        .transcribeProviders,
    ).toEqual(['openai', 'local']);
  });

  it('reads the account area settings: PUBLIC_URL, login link and session lengths, the page’s OIDC client', () => {
    const base = { API_KEY_PEPPER: 'p'.repeat(32) };
    expect(loadConfig({ ...base, PORT: '8080' })).toMatchObject({
      publicUrl: 'http://localhost:8080',
      sessions: { loginLinkMinutes: 10, sessionHours: 8 },
    });
    expect(loadConfig({ ...base, PUBLIC_URL: 'https://gate.example.com/mg/', LOGIN_LINK_MINUTES: '5', SESSION_HOURS: '12' })).toMatchObject(
      {
        publicUrl: 'https://gate.example.com/mg',
        sessions: { loginLinkMinutes: 5, sessionHours: 12 },
      },
    );
    expect(loadConfig({ ...base, OIDC_ISSUER: 'https://id.example.com', OIDC_AUDIENCE: 'a', OIDC_CLIENT_ID: 'page' }).oidc).toMatchObject({
      clientId: 'page',
    });
    expect(loadConfig({ ...base, OIDC_ISSUER: 'https://id.example.com', OIDC_AUDIENCE: 'a' }).oidc).toMatchObject({ clientId: null });
    for (const bad of [
      { PUBLIC_URL: 'ftp://x.example' },
      { PUBLIC_URL: 'https://x.example/?a=1' },
      { LOGIN_LINK_MINUTES: '0' },
      { SESSION_HOURS: 'long' },
      { OIDC_CLIENT_ID: 'page' },
    ]) {
      expect(() => loadConfig({ ...base, ...bad })).toThrow(ConfigError);
    }
  });

  it('reads TRUST_PROXY: off unless set, a hop count, or proxies’ addresses; a bad entry is named by its place, never echoed', () => {
    const base = { API_KEY_PEPPER: 'p'.repeat(32) };
    expect(loadConfig(base).trustProxy).toBeNull();
    expect(loadConfig({ ...base, TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ ...base, TRUST_PROXY: ' 10.0.0.0/8, 192.0.2.7 ,::1,fd00::/8, Loopback,10.1.0.0/255.255.0.0 ' }).trustProxy).toEqual(
      ['10.0.0.0/8', '192.0.2.7', '::1', 'fd00::/8', 'loopback', '10.1.0.0/255.255.0.0'],
    );
    const said = (value: string) => readConfig({ ...base, TRUST_PROXY: value }).problems.map((p) => `${p.field}: ${p.message}`);
    expect(said('0')).toEqual(['TRUST_PROXY: a hop count must be at least 1 (unset: no proxy is trusted)']);
    const entry = 'must be an IP address or CIDR range (or loopback, linklocal, uniquelocal); the list is separated by commas';
    expect(said('10.0.0.1,proxy.internal,10.0.0.0/33,1.2.3,')).toEqual([
      `TRUST_PROXY.1: ${entry}`,
      `TRUST_PROXY.2: ${entry}`,
      `TRUST_PROXY.3: ${entry}`,
      `TRUST_PROXY.4: ${entry}`,
    ]);
    expect(said('true')).toEqual([`TRUST_PROXY.0: ${entry}`]);
  });

  it('reads without writing: the pepper is kept in the data directory only when the process prepares it', () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'cfg-')), 'data');
    const settings = loadConfig({ MEDIAGATE_DATA_DIR: dataDir });
    expect(settings.apiKeyPepper).toBeNull();
    expect(existsSync(dataDir)).toBe(false);
    const first = prepareConfig(settings).apiKeyPepper;
    expect(first).toMatch(/^[\w-]{43}$/);
    expect(readFileSync(join(dataDir, 'api-key-pepper'), 'utf8').trim()).toBe(first);
    // The same one on the next start, so keys made before still match.
    expect(prepareConfig(loadConfig({ MEDIAGATE_DATA_DIR: dataDir })).apiKeyPepper).toBe(first);
    // Set, it is used as given and nothing is written.
    const other = join(dataDir, 'other');
    expect(prepareConfig(loadConfig({ MEDIAGATE_DATA_DIR: other, API_KEY_PEPPER: 'q'.repeat(32) })).apiKeyPepper).toBe('q'.repeat(32));
    expect(existsSync(other)).toBe(false);
  });
});
