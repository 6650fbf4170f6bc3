import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The image `npm run test:image` built (deploy/local-images/check.sh names it). */
export const IMAGE = process.env.MEDIAGATE_IMAGE ?? '';
if (!IMAGE) throw new Error('MEDIAGATE_IMAGE is not set: run these through npm run test:image, which builds the image first');

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end and answers its exit code and output, whatever the code. */
export function run(
  file: string,
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { env: options.env ?? process.env, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 300_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) + (error && code === -1 ? `\n${error.message}` : '') });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** As `run`, but a non-zero exit is an error that shows the command and the end of what it printed. */
export async function must(file: string, args: string[], options: Parameters<typeof run>[2] = {}): Promise<string> {
  const r = await run(file, args, options);
  if (r.code !== 0)
    throw new Error(`${file} ${args.join(' ')} exited ${r.code}:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`.trimEnd());
  return r.stdout;
}

export const docker = (...args: string[]) => must('docker', args);

/** A container's health (starting, healthy, unhealthy), or its state when it has stopped. */
export async function healthOf(container: string): Promise<string> {
  const [status, health] = (
    await docker('inspect', '--format', '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}', container)
  )
    .trim()
    .split(' ');
  return status === 'running' ? (health ?? 'running') : status;
}

/** What a container printed, both streams. */
export async function logsOf(container: string): Promise<string> {
  const r = await run('docker', ['logs', container]);
  return r.stdout + r.stderr;
}

/** The mediagate CLI inside a running container, with --json: its last line, parsed. */
export async function cliIn<T = unknown>(container: string, ...args: string[]): Promise<T> {
  const out = await docker('exec', '-e', 'LOG_LEVEL=silent', container, 'node', 'dist/cli/main.js', '--json', ...args);
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

export interface CurlReply {
  status: number;
  headers: Record<string, string>;
  body: string;
  json: <T = unknown>() => T;
}

/** One request with curl, as a caller would send it; the status, the headers (lower-case) and the body. */
export async function curl(method: string, url: string, headers: Record<string, string> = {}, body?: unknown): Promise<CurlReply> {
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-curl-'));
  try {
    const args = ['-sS', '-X', method, '-D', join(dir, 'headers'), '-o', join(dir, 'body'), '--max-time', '600'];
    for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
    if (body !== undefined) args.push('-H', 'content-type: application/json', '--data-binary', '@-');
    await must('curl', [...args, url], { input: body === undefined ? undefined : JSON.stringify(body) });
    // The last response's head (curl writes every one, such as a 100 Continue, to the file).
    const head = readFileSync(join(dir, 'headers'), 'utf8')
      .trim()
      .split(/\r?\n\r?\n/)
      .at(-1)!
      .split(/\r?\n/);
    const status = Number(head[0].split(' ')[1]);
    const parsed = Object.fromEntries(
      head.slice(1).map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const text = readFileSync(join(dir, 'body'), 'utf8');
    const json = () => {
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(`${method} ${url} answered ${status} with a body that is not JSON: ${text.slice(0, 500)}`);
      }
    };
    return { status, headers: parsed, body: text, json };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Throws with the whole answer when the status is not the one expected, so a failure says what the gateway said. */
export function expectStatus(reply: CurlReply, status: number, what: string): void {
  if (reply.status !== status) throw new Error(`${what}: expected ${status}, got ${reply.status}: ${reply.body.slice(0, 2000)}`);
}

/** Media a gateway parses and transcribes, made here by ffmpeg: a short test video with a tone, and speech by flite. */
export function makeCheckMedia(): { video: Buffer; speech: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'mediagate-image-media-'));
  try {
    const ffmpeg = (...args: string[]) => execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args], { stdio: 'pipe' });
    ffmpeg(
      ...['-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=10:duration=3', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=3'],
      ...['-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-c:a', 'aac', '-movflags', '+faststart', join(dir, 'clip.mp4')],
    );
    execFileSync('flite', ['-t', 'hello world', '-o', join(dir, 'hello.wav')]);
    // The words as a caller would have them: compressed audio in a container, made by ffmpeg.
    ffmpeg('-i', join(dir, 'hello.wav'), '-c:a', 'aac', '-b:a', '64k', join(dir, 'hello.m4a'));
    return { video: readFileSync(join(dir, 'clip.mp4')), speech: readFileSync(join(dir, 'hello.m4a')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A free TCP port on this machine (for a container on the host's network). */
export function freePort(): Promise<number> {
  return import('node:net').then(
    ({ createServer }) =>
      new Promise((resolve, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => {
          const { port } = server.address() as { port: number };
          server.close(() => resolve(port));
        });
      }),
  );
}
