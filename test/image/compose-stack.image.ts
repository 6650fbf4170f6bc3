import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { serveBytes, startFakeSite, type FakeSite } from '../fakes/site.fake.js';
import { waitFor } from '../support/wait-for.js';
import { IMAGE, cliIn, curl, docker, expectStatus, healthOf, logsOf, makeCheckMedia, must, run } from './docker.js';
import type { JobBody, ParseBody, TranscriptionBody } from '../support/bodies.js';

// The compose stack as an operator starts it (`docker compose up -d --scale gateway=2`): two gateways
// behind the nginx load balancer, the worker, PostgreSQL and Redis, from docker-compose.yml with the
// check's override (deploy/local-images/compose.override.yml: local stand-ins for Docker Hub's
// images). Asked only through the load balancer's published port.

const suffix = randomBytes(4).toString('hex');
const project = `mgcheck${suffix}`;
const dir = mkdtempSync(join(tmpdir(), 'mediagate-compose-check-'));
const file = join(dir, 'compose.yml');

let site: FakeSite;
let lb: string;
let key: string;
let gateways: { id: string; name: string }[];
/** The address each request for the media came from (the container that fetched it), by path. */
const fetchedBy = new Map<string, string[]>();

const compose = (...args: string[]) => must('docker-compose', ['-p', project, '-f', file, ...args], { timeoutMs: 600_000 });
const authorized = () => ({ authorization: `Bearer ${key}` });

/** The containers of one service of this project, running or not. */
async function containersOf(service: string): Promise<{ id: string; name: string }[]> {
  const out = await docker(
    ...['ps', '-a', '--filter', `label=com.docker.compose.project=${project}`, '--filter', `label=com.docker.compose.service=${service}`],
    ...['--format', '{{.ID}} {{.Names}}'],
  );
  return out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => ({ id: line.split(' ')[0], name: line.split(' ')[1] }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

async function addressOf(container: string): Promise<string> {
  return (await docker('inspect', '--format', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', container)).trim();
}

/** Every service's state, the end of each one's log and PostgreSQL's own messages, for a failure message. */
async function stackReport(): Promise<string> {
  const ps = await run('docker-compose', ['-p', project, '-f', file, 'ps']);
  const parts = [ps.stdout];
  for (const service of ['gateway', 'worker', 'lb', 'redis']) {
    const logs = await run('docker-compose', ['-p', project, '-f', file, 'logs', '--no-color', '--tail', '25', service]);
    parts.push(logs.stdout.slice(-5000));
  }
  // Its statements span many lines; the server's own lines say what happened to it.
  const postgres = await run('docker-compose', ['-p', project, '-f', file, 'logs', '--no-color', 'postgres']);
  parts.push(
    postgres.stdout
      .split('\n')
      .filter((l) => /UTC \[\d+\] (LOG|FATAL|PANIC|ERROR|WARNING)/.test(l))
      .slice(-40)
      .join('\n'),
  );
  return parts.join('\n');
}

/** A step whose failure should show the stack's state and logs along with its own message. */
async function reported<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await stackReport()}`);
  }
}

async function parseThroughLb(requestId: string) {
  const reply = await curl(
    'POST',
    `${lb}/api/parse`,
    { ...authorized(), 'x-request-id': requestId },
    { url: `${site.origin}/clip.mp4?r=${requestId}` },
  );
  expectStatus(reply, 200, `the parse ${requestId}`);
  return reply;
}

beforeAll(async () => {
  const media = makeCheckMedia();
  // On every address: the containers reach this machine through their bridge (host.docker.internal).
  site = await startFakeSite({ host: '0.0.0.0' });
  for (const [path, body, type] of [
    ['/clip.mp4', media.video, 'video/mp4'],
    ['/hello.m4a', media.speech, 'audio/mp4'],
  ] as const) {
    site.route(path, (req: IncomingMessage, res: ServerResponse) => {
      fetchedBy.set(path, [...(fetchedBy.get(path) ?? []), (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '')]);
      serveBytes(req, res, body, type);
    });
  }
  const port = site.hostPort.split(':')[1];
  site.origin = `http://host.docker.internal:${port}`;
  const env = {
    ...process.env,
    MEDIAGATE_IMAGE: IMAGE,
    API_KEY_PEPPER: randomBytes(32).toString('base64url'),
    POSTGRES_PASSWORD: randomBytes(16).toString('hex'),
    FETCH_ALLOW_HOSTS: `host.docker.internal:${port}`,
    COMPOSE_PROFILES: '',
    // Each gateway logs the requests it answers (jest's own setup silences this process's logs).
    LOG_LEVEL: 'info',
  };
  // docker-compose.yml with the override, as compose itself merges them; the load balancer publishes
  // on a free port of 127.0.0.1 instead of 4000, which may be taken on a shared machine (an override
  // can only add ports, never replace them).
  const merged = parse(
    await must('docker-compose', ['-p', project, '-f', 'docker-compose.yml', '-f', 'deploy/local-images/compose.override.yml', 'config'], {
      env,
    }),
  );
  merged.services.lb.ports = ['127.0.0.1::80'];
  // As JSON, which YAML 1.1 (compose's) reads exactly: `no` unquoted would be a boolean there.
  writeFileSync(file, JSON.stringify(merged, null, 2), { mode: 0o600 });
  await reported(() => compose('up', '-d', '--no-build', '--scale', 'gateway=2'));
  gateways = await containersOf('gateway');
  expect(gateways).toHaveLength(2);
  await reported(() =>
    waitFor(async () => (await Promise.all(gateways.map((g) => healthOf(g.id)))).every((h) => h === 'healthy'), {
      timeout: 300_000,
      interval: 1000,
      describe: 'both gateways to turn healthy',
    }),
  );
  lb = `http://${(await compose('port', 'lb', '80')).trim()}`;
}, 900_000);

afterAll(async () => {
  await run('docker-compose', ['-p', project, '-f', file, 'down', '-v', '--remove-orphans'], { timeoutMs: 300_000 });
  rmSync(dir, { recursive: true, force: true });
  await site?.close();
}, 300_000);

describe(`the compose stack with two gateways (${IMAGE})`, () => {
  it('runs every service: two gateways healthy, the worker, PostgreSQL and Redis healthy, the load balancer', async () => {
    for (const service of ['postgres', 'redis']) {
      const [one] = await containersOf(service);
      expect(`${service}: ${await healthOf(one.id)}`).toBe(`${service}: healthy`);
    }
    for (const service of ['worker', 'lb']) {
      const [one] = await containersOf(service);
      expect(`${service}: ${await healthOf(one.id)}`).toBe(`${service}: running`);
    }
    const ready = await curl('GET', `${lb}/readyz`);
    expectStatus(ready, 200, '/readyz through the load balancer');
  });

  it('makes an account and a key with the CLI inside a gateway container', async () => {
    const made = <T>(...args: string[]) => reported(() => cliIn<T>(gateways[0].id, ...args));
    const account = await made<{ id: string }>(
      'account',
      'create',
      '--name',
      'Compose check',
      '--credits',
      '20',
      '--membership-days',
      '30',
    );
    key = (await made<{ key: string }>('key', 'create', account.id)).key;
    expect(key).toMatch(/^mg_live_/);
  });

  it('spreads parses over both gateways (each logs the request ids it answered), charging each once', async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `spread-${suffix}-${i}`);
    const balances: number[] = [];
    for (const id of ids) balances.push((await parseThroughLb(id)).json<ParseBody>().credits.balance);
    expect(balances).toEqual([19, 18, 17, 16, 15, 14]);
    const byGateway: Record<string, string[]> = {};
    for (const g of gateways) {
      const logs = await logsOf(g.id);
      byGateway[g.name] = ids.filter((id) => logs.includes(`"reqId":"${id}"`));
    }
    // Every request answered by exactly one gateway, and each gateway answered some.
    expect(Object.values(byGateway).flat().sort()).toEqual([...ids].sort());
    for (const [name, answeredIds] of Object.entries(byGateway)) expect(`${name}: ${answeredIds.length > 0}`).toBe(`${name}: true`);
  });

  it('finishes a queued transcription (Prefer: respond-async) in the worker', async () => {
    const accepted = await curl(
      'POST',
      `${lb}/api/transcribe`,
      { ...authorized(), prefer: 'respond-async' },
      {
        mediaUrl: `${site.origin}/hello.m4a`,
        language: 'en',
      },
    );
    expectStatus(accepted, 202, 'the queued transcription');
    const location = accepted.headers.location;
    expect(location).toMatch(/^\/api\/jobs\//);
    const job = await waitFor(
      async () => {
        const reply = await curl('GET', `${lb}${location}`, authorized());
        expectStatus(reply, 200, 'the job');
        const body = reply.json<JobBody<TranscriptionBody>>();
        if (body.status === 'FAILED') throw new Error(`the job failed: ${reply.body}`);
        return body.status === 'SUCCEEDED' && body;
      },
      { timeout: 180_000, interval: 1000, describe: 'the queued transcription to succeed' },
    );
    expect(job.result).toMatchObject({ provider: 'local', credits: { charged: 1, balance: 13 } });
    expect(job.result?.text).toMatch(/hello/i);
    // The media was fetched from the worker's address, not a gateway's (they work no queue).
    const [worker] = await containersOf('worker');
    expect(fetchedBy.get('/hello.m4a')).toContain(await addressOf(worker.id));
    for (const g of gateways) expect(fetchedBy.get('/hello.m4a')).not.toContain(await addressOf(g.id));
  });

  it('answers the next requests when a gateway is killed', async () => {
    const [victim, survivor] = gateways;
    await docker('kill', victim.id);
    const ids = Array.from({ length: 4 }, (_, i) => `after-kill-${suffix}-${i}`);
    for (const id of ids) await reported(() => parseThroughLb(id));
    const survivorLogs = await logsOf(survivor.id);
    expect(ids.filter((id) => survivorLogs.includes(`"reqId":"${id}"`))).toEqual(ids);
  });

  it('down -v leaves no container, network or volume of the stack', async () => {
    await compose('down', '-v', '--remove-orphans');
    const label = `label=com.docker.compose.project=${project}`;
    expect(await docker('ps', '-a', '-q', '--filter', label)).toBe('');
    expect(await docker('network', 'ls', '-q', '--filter', label)).toBe('');
    expect(await docker('volume', 'ls', '-q', '--filter', label)).toBe('');
  });
});
