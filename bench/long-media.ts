import { join } from 'node:path';
import { extractAudio } from '../src/media/audio-extraction.js';
import { runTool } from '../src/media/ffmpeg.js';

/** Sound with a pause every few seconds, like speech, as 64 kbit/s MP3. */
export async function makeLongMedia(dir: string, minutes: number, ffmpegPath: string): Promise<string> {
  const path = join(dir, 'long.mp3');
  const tone = `aevalsrc='0.4*sin(2*PI*220*t)*sin(2*PI*3*t)*lt(mod(t\\,9.3)\\,8)':s=22050:d=${minutes * 60}`;
  await runTool(
    ffmpegPath,
    ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', tone, '-ac', '1', '-c:a', 'libmp3lame', '-b:a', '64k', path],
    {},
    10 * 60_000,
  );
  return path;
}

export interface LongMediaRow {
  scenario: string;
  status: number;
  'wall s': number;
  'ffmpeg extraction s': number;
  'wall ÷ extraction': number;
  pieces: number;
  'longest upload s': number;
  charged: number;
  /** What the ledger should have charged: per started minute of the probed length. */
  expected: number;
  /** The error the gateway answered, if it did not succeed. */
  error?: string;
}

/**
 * One long transcription through the gateway, alone: its wall time against ffmpeg's own
 * extraction of the same file, and how it was cut into uploads.
 */
export async function runLongMedia(opts: {
  gateway: string;
  key: string;
  mediaUrl: string;
  file: string;
  dir: string;
  ffmpegPath: string;
  minutes: number;
  msPerAudioSecond: number;
  uploads: readonly number[];
  pricePerMinute: number;
}): Promise<LongMediaRow> {
  const extractionStarted = performance.now();
  await extractAudio(opts.file, join(opts.dir, 'extracted.mp3'), { ffmpegPath: opts.ffmpegPath });
  const extraction = (performance.now() - extractionStarted) / 1000;
  const started = performance.now();
  const res = await fetch(`${opts.gateway}/api/transcribe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${opts.key}` },
    body: JSON.stringify({ mediaUrl: opts.mediaUrl }),
    signal: AbortSignal.timeout(3_600_000),
  });
  const body = (await res.json()) as { durationSeconds?: number; credits?: { charged: number }; error?: { code: string; message: string } };
  const wall = (performance.now() - started) / 1000;
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    scenario: `transcribe ${opts.minutes} min (server ${opts.msPerAudioSecond} ms per audio second)`,
    status: res.status,
    'wall s': round(wall),
    'ffmpeg extraction s': round(extraction),
    'wall ÷ extraction': round(wall / extraction),
    pieces: opts.uploads.length,
    'longest upload s': Math.round(Math.max(0, ...opts.uploads)),
    charged: body.credits?.charged ?? 0,
    // An encoded hour runs a few milliseconds over, hence per started minute of what was probed.
    expected: res.ok ? Math.max(1, Math.ceil((body.durationSeconds ?? 0) / 60)) * opts.pricePerMinute : 0,
    ...(body.error && { error: `${body.error.code}: ${body.error.message}` }),
  };
}
