import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { findRunningEmbedded, passwordFile, startEmbedded, type EmbeddedDatabase } from '../../src/db/embedded.js';

/** Connects with `url` and runs one query; the error as the driver reports it otherwise. */
async function query(url: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return (await client.query('select 40 + 2 as answer')).rows[0];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A client that skips authentication: the startup message, then a query at once. Returns every byte the server sent before it closed. */
function rawQuery(host: string, port: number): Promise<Buffer> {
  const params = Buffer.from('user\0postgres\0database\0postgres\0\0');
  const startup = Buffer.alloc(8 + params.length);
  startup.writeInt32BE(startup.length, 0);
  startup.writeInt32BE(196608, 4);
  params.copy(startup, 8);
  const sqlText = Buffer.from('select 1\0');
  const q = Buffer.alloc(5 + sqlText.length);
  q.write('Q', 0);
  q.writeInt32BE(4 + sqlText.length, 1);
  sqlText.copy(q, 5);
  return new Promise((resolve, reject) => {
    const socket = connect(port, host, () => socket.write(Buffer.concat([startup, q])));
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/** The embedded database's socket is for whoever holds the password kept in the data directory. */
describe('embedded database socket: password required', () => {
  let dataDir: string;
  let embedded: EmbeddedDatabase;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mediagate-embedded-auth-'));
    embedded = await startEmbedded(dataDir, { announce: true });
  });
  afterAll(async () => {
    await embedded.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('generates the password into the data directory, readable by its owner only', () => {
    const file = passwordFile(dataDir);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim()).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('lets in a client with the password, as the operator commands find it', async () => {
    const url = findRunningEmbedded(dataDir);
    expect(url).toBe(embedded.clientUrl);
    expect(await query(url!)).toEqual({ answer: 42 });
  });

  it('refuses a wrong password with PostgreSQL’s authentication error', async () => {
    const url = new URL(embedded.clientUrl);
    url.password = 'not-the-password';
    await expect(query(url.toString())).rejects.toMatchObject({
      code: '28P01',
      message: 'password authentication failed for user "postgres"',
    });
    url.password = '';
    await expect(query(url.toString())).rejects.toThrow();
  });

  it('answers a client that skips authentication with an error and closes, running nothing', async () => {
    const url = new URL(embedded.clientUrl);
    const reply = await rawQuery(url.hostname, Number(url.port));
    // AuthenticationSASL (R, code 10, SCRAM-SHA-256), then ErrorResponse 28000; no RowDescription or DataRow.
    expect(reply[0]).toBe('R'.charCodeAt(0));
    expect(reply.readInt32BE(5)).toBe(10);
    const error = reply.subarray(reply.readInt32BE(1) + 1);
    expect(String.fromCharCode(error[0])).toBe('E');
    expect(error.toString('latin1')).toContain('C28000\0');
    expect(reply.includes(Buffer.from('D\0'))).toBe(false);
  });

  it('keeps the same password across restarts', async () => {
    const before = readFileSync(passwordFile(dataDir), 'utf8');
    await embedded.stop();
    embedded = await startEmbedded(dataDir, { announce: true });
    expect(readFileSync(passwordFile(dataDir), 'utf8')).toBe(before);
    expect(statSync(passwordFile(dataDir)).mode & 0o777).toBe(0o600);
    expect(await query(embedded.clientUrl)).toEqual({ answer: 42 });
  });
});
