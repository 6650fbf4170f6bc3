import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { extractAudio } from '../../../src/media/audio-extraction.js';
import { MediaError, probeMedia } from '../../../src/media/ffmpeg.js';
import { waitFor } from '../../support/wait-for.js';

const FFMPEG = process.env.FFMPEG_PATH ?? 'ffmpeg';
const dir = mkdtempSync(join(tmpdir(), 'mediagate-ffmpeg-test-'));
const path = (name: string) => join(dir, name);
const ffmpeg = (...args: string[]) => execFileSync(FFMPEG, ['-hide_banner', '-loglevel', 'error', '-y', ...args], { stdio: 'pipe' });

/** The streams of a file as ffprobe reports them, read independently of the code under test. */
function streamsOf(file: string): { codec_type: string; codec_name: string; channels?: number; sample_rate?: string }[] {
  const out = execFileSync(process.env.FFPROBE_PATH ?? 'ffprobe', ['-v', 'error', '-print_format', 'json', '-show_streams', file]);
  return JSON.parse(out.toString()).streams;
}

beforeAll(() => {
  ffmpeg('-f', 'lavfi', '-i', 'sine=frequency=440:duration=3', '-ac', '2', path('tone.mp3'));
  ffmpeg('-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=2', '-pix_fmt', 'yuv420p', path('silent.mp4'));
  ffmpeg(
    '-f',
    'lavfi',
    '-i',
    'testsrc=size=160x120:rate=10:duration=4',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=220:duration=4:sample_rate=44100',
    '-pix_fmt',
    'yuv420p',
    '-c:a',
    'aac',
    '-ac',
    '2',
    '-shortest',
    path('muxed.mp4'),
  );
  // Real speech, by flite (installed wherever the tests run: README's apt-get line): missing, the file fails.
  execFileSync('flite', ['-t', 'hello world, this is mediagate speaking', '-o', path('speech.wav')]);
  writeFileSync(path('junk.mp3'), 'this is not media at all\n'.repeat(100));
  // A playlist pointing at another local file: the HLS demuxer would follow it, the whitelist must not.
  writeFileSync(path('list.m3u8'), `#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:3,\n${path('tone.mp3')}\n#EXT-X-ENDLIST\n`);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('probeMedia', () => {
  it('reads duration and streams of an audio file', async () => {
    const probe = await probeMedia(path('tone.mp3'));
    expect(Math.abs(probe.durationSeconds - 3)).toBeLessThanOrEqual(0.1);
    expect(probe).toMatchObject({ hasAudio: true, hasVideo: false, formatName: 'mp3' });
  });

  it('reads a video without sound and a muxed video', async () => {
    const silent = await probeMedia(path('silent.mp4'));
    expect(Math.abs(silent.durationSeconds - 2)).toBeLessThanOrEqual(0.1);
    expect([silent.hasAudio, silent.hasVideo]).toEqual([false, true]);
    const muxed = await probeMedia(path('muxed.mp4'));
    expect(Math.abs(muxed.durationSeconds - 4)).toBeLessThanOrEqual(0.1);
    expect([muxed.hasAudio, muxed.hasVideo]).toEqual([true, true]);
    expect(muxed.formatName).toContain('mp4');
  });

  it('reads synthesised speech', async () => {
    const probe = await probeMedia(path('speech.wav'));
    expect(probe).toMatchObject({ hasAudio: true, hasVideo: false, formatName: 'wav' });
    expect(probe.durationSeconds).toBeGreaterThan(1);
  });

  it('calls a file that is not media unreadable', async () => {
    await expect(probeMedia(path('junk.mp3'))).rejects.toMatchObject({ name: 'MediaError', kind: 'unreadable' });
    await expect(probeMedia(path('missing.mp3'))).rejects.toMatchObject({ kind: 'unreadable' });
  });

  it('refuses playlists that would make it open other files', async () => {
    await expect(probeMedia(path('list.m3u8'))).rejects.toMatchObject({ kind: 'unreadable' });
  });

  it.each(['relative/file.mp3', 'file.mp3', 'http://127.0.0.1/a.mp3', 'file:///etc/passwd', 'https://example.com/a.mp4', ''])(
    'rejects %j, which is not an absolute local path, without running ffprobe',
    async (input) => {
      const err = await probeMedia(input, { ffprobePath: '/nonexistent/ffprobe' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MediaError);
      expect(err).toMatchObject({ kind: 'unreadable', message: 'only absolute local file paths are accepted' });
    },
  );

  it('says unreadable when the binary is missing', async () => {
    await expect(probeMedia(path('tone.mp3'), { ffprobePath: '/nonexistent/ffprobe' })).rejects.toMatchObject({ kind: 'unreadable' });
  });
});

describe('extractAudio', () => {
  it('writes mono 16 kHz MP3 of the same length from a video', async () => {
    await extractAudio(path('muxed.mp4'), path('muxed.out.mp3'));
    const streams = streamsOf(path('muxed.out.mp3'));
    expect(streams).toHaveLength(1);
    expect(streams[0]).toMatchObject({ codec_type: 'audio', codec_name: 'mp3', channels: 1, sample_rate: '16000' });
    const probe = await probeMedia(path('muxed.out.mp3'));
    // MP3 adds encoder delay and padding (a frame of 1152 samples is 72 ms at 16 kHz) at the ends.
    expect(Math.abs(probe.durationSeconds - 4)).toBeLessThanOrEqual(0.15);
    // 32 kbit/s is about 4000 bytes a second.
    expect(statSync(path('muxed.out.mp3')).size).toBeLessThan(4 * 4000 * 1.3);
  });

  it('turns stereo audio into mono and honours another sample rate and bitrate', async () => {
    await extractAudio(path('tone.mp3'), path('tone.8k.mp3'), { sampleRate: 8000, bitrate: '16k' });
    expect(streamsOf(path('tone.8k.mp3'))[0]).toMatchObject({ codec_name: 'mp3', channels: 1, sample_rate: '8000' });
  });

  it('extracts speech from a WAV file', async () => {
    await extractAudio(path('speech.wav'), path('speech.mp3'));
    expect(streamsOf(path('speech.mp3'))[0]).toMatchObject({ codec_name: 'mp3', channels: 1, sample_rate: '16000' });
  });

  it('says no_audio for a video without sound', async () => {
    const err = await extractAudio(path('silent.mp4'), path('silent.out.mp3')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MediaError);
    expect((err as MediaError).kind).toBe('no_audio');
  });

  it('says unreadable for a file that is not media', async () => {
    await expect(extractAudio(path('junk.mp3'), path('junk.out.mp3'))).rejects.toMatchObject({ kind: 'unreadable' });
  });

  it('rejects URLs and relative paths for input and output', async () => {
    for (const [input, output] of [
      ['http://127.0.0.1:9/a.mp4', path('u.mp3')],
      ['file:///etc/passwd', path('u.mp3')],
      ['media/a.mp4', path('u.mp3')],
      [path('tone.mp3'), 'out.mp3'],
      [path('tone.mp3'), 'ftp://example.com/out.mp3'],
    ]) {
      await expect(extractAudio(input, output)).rejects.toMatchObject({ name: 'MediaError', kind: 'unreadable' });
    }
  });

  describe('with a tool that hangs', () => {
    const script = path('hang.sh');
    const pidFile = path('hang.pid');
    beforeAll(() => {
      writeFileSync(script, `#!/bin/sh\necho $$ > '${pidFile}'\nexec sleep 30\n`);
      chmodSync(script, 0o755);
    });

    beforeEach(() => rmSync(pidFile, { force: true }));

    /** True while the process exists (signal 0 only checks). */
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };

    it('times out with kind timeout and kills the child', async () => {
      const started = Date.now();
      const err = await extractAudio(path('tone.mp3'), path('t.mp3'), { ffmpegPath: script, timeoutMs: 300 }).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'MediaError', kind: 'timeout' });
      expect(Date.now() - started).toBeLessThan(5000);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      expect(alive(pid)).toBe(false);
    });

    it("rethrows the caller's abort reason and kills the child", async () => {
      const controller = new AbortController();
      const reason = new Error('caller went away');
      const probing = probeMedia(path('tone.mp3'), { ffprobePath: script, signal: controller.signal });
      // The caller gives up once the child runs (it has written its pid).
      await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), {
        describe: 'the hanging tool to start',
        timeout: 5_000,
        interval: 10,
      });
      controller.abort(reason);
      await expect(probing).rejects.toBe(reason);
      const pid = Number(readFileSync(pidFile, 'utf8'));
      expect(alive(pid)).toBe(false);
    });

    it('does not start at all when the signal is already aborted', async () => {
      const reason = new Error('already gone');
      await expect(extractAudio(path('tone.mp3'), path('t2.mp3'), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    });
  });
});
