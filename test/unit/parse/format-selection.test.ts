import { ProviderError } from '../../../src/errors.js';
import { classifyDirectMedia } from '../../../src/providers/parse/direct-media.js';
import { selectFormat } from '../../../src/providers/parse/format-selection.js';
import type { MediaFormat } from '../../../src/providers/parse/parse.types.js';

const f = (url: string, over: Partial<MediaFormat> = {}): MediaFormat => ({
  url,
  kind: 'video',
  container: 'mp4',
  width: null,
  height: null,
  hasAudio: true,
  hasVideo: true,
  expiresAt: null,
  headers: null,
  ...over,
});

const ladder = [f('v360', { height: 360 }), f('v1080', { height: 1080 }), f('v720', { height: 720 }), f('v2160', { height: 2160 })];

describe('selectFormat', () => {
  it.each([
    ['max', 'v2160'],
    ['1080', 'v1080'],
    ['720', 'v720'],
    ['480', 'v360'],
  ] as const)('quality %s picks %s', (quality, url) => {
    expect(selectFormat('t', ladder, 'auto', quality).media.url).toBe(url);
  });

  it('picks the shortest when every known height is taller than asked', () => {
    expect(selectFormat('t', [f('a', { height: 1080 }), f('b', { height: 720 })], 'auto', '480').media.url).toBe('b');
  });

  it('prefers a known height that fits over an unknown one, and an unknown one over a taller one', () => {
    expect(selectFormat('t', [f('u'), f('k', { height: 480 })], 'auto', '720').media.url).toBe('k');
    expect(selectFormat('t', [f('u'), f('k', { height: 1080 })], 'auto', '720').media.url).toBe('u');
  });

  it('prefers a file to a manifest and mp4 to webm at the same height', () => {
    const pick = selectFormat('t', [f('m', { height: 720, container: 'm3u8' }), f('w', { height: 720, container: 'webm' }), f('p', { height: 720 })], 'auto', '720');
    expect(pick.media.url).toBe('p');
    expect(pick.alternatives.map((a) => a.url)).toEqual(['w', 'm']);
  });

  it('mode audio: an audio-only format, or the separate audio track of a video variant', () => {
    const audio = f('a.mp3', { kind: 'audio', container: 'mp3', hasVideo: false });
    expect(selectFormat('t', [...ladder, audio], 'audio', '720').media.url).toBe('a.mp3');
    const track = f('track.m4a', { kind: 'audio', container: 'm4a', hasVideo: false });
    expect(selectFormat('t', [f('v', { hasAudio: false, audio: track })], 'audio', '720').media.url).toBe('track.m4a');
    expect(() => selectFormat('t', ladder, 'audio', '720')).toThrow(ProviderError);
  });

  it('mode mute: only a video without sound; otherwise a clear no_media', () => {
    expect(selectFormat('t', [...ladder, f('silent', { height: 720, hasAudio: false })], 'mute', '1080').media.url).toBe('silent');
    try {
      selectFormat('t', ladder, 'mute', '720');
      throw new Error('expected no_media');
    } catch (err) {
      expect(err).toBeInstanceOf(ProviderError);
      expect((err as ProviderError).kind).toBe('no_media');
      expect((err as ProviderError).message).toMatch(/auto/);
    }
  });

  it('mode auto falls back to audio on an audio-only page', () => {
    expect(selectFormat('t', [f('a.mp3', { kind: 'audio', hasVideo: false })], 'auto', '720').media.url).toBe('a.mp3');
  });
});

describe('classifyDirectMedia', () => {
  it.each([
    ['video/mp4', 'https://x.example/a', 'video', 'mp4'],
    ['audio/mpeg; charset=binary', 'https://x.example/a', 'audio', 'mp3'],
    ['application/vnd.apple.mpegurl', 'https://x.example/master', 'video', 'm3u8'],
    ['application/dash+xml', 'https://x.example/m', 'video', 'mpd'],
    ['application/octet-stream', 'https://x.example/clip.webm', 'video', 'webm'],
    [null, 'https://x.example/song.flac', 'audio', 'flac'],
    ['image/jpeg', 'https://x.example/p', 'image', 'jpg'],
  ])('%s at %s is %s/%s', (type, url, kind, container) => {
    expect(classifyDirectMedia(type, url)).toMatchObject({ url, kind, container });
  });

  it.each([
    ['text/html; charset=utf-8', 'https://x.example/video.mp4'],
    ['application/json', 'https://x.example/a.mp3'],
    [null, 'https://x.example/watch?v=1'],
  ])('%s at %s is not media', (type, url) => {
    expect(classifyDirectMedia(type, url)).toBeNull();
  });
});
