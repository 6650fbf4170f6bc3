import { ProviderError } from '../../../src/errors.js';
import { selectFormat } from '../../../src/providers/parse/format-selection.js';
import type { MediaFormat, ParseMode, ParseQuality } from '../../../src/providers/parse/parse.types.js';

const f = (url: string, over: Partial<MediaFormat> = {}): MediaFormat => ({
  url,
  kind: 'video',
  container: 'mp4',
  width: null,
  height: null,
  bitrate: null,
  codecs: null,
  durationSeconds: null,
  hasAudio: true,
  hasVideo: true,
  expiresAt: null,
  headers: null,
  ...over,
});
const a = (url: string, over: Partial<MediaFormat> = {}) => f(url, { kind: 'audio', container: 'm4a', hasVideo: false, ...over });
const urls = (list: MediaFormat[]) => list.map((x) => x.url);

/** The ProviderError selectFormat throws, so its kind and message can be checked. */
function failure(formats: MediaFormat[], mode: ParseMode, quality: ParseQuality = '720'): ProviderError {
  try {
    selectFormat('builtin', formats, mode, quality);
  } catch (err) {
    expect(err).toBeInstanceOf(ProviderError);
    return err as ProviderError;
  }
  throw new Error('selectFormat did not throw');
}

const ladder = [f('v360', { height: 360 }), f('v1080', { height: 1080 }), f('v720', { height: 720 }), f('v2160', { height: 2160 })];

describe('selectFormat: quality', () => {
  it.each([
    ['max', 'v2160', ['v1080', 'v720', 'v360']],
    ['1080', 'v1080', ['v720', 'v360', 'v2160']],
    ['720', 'v720', ['v360', 'v1080', 'v2160']],
    ['480', 'v360', ['v720', 'v1080', 'v2160']],
  ] as const)('%s picks %s; the runners-up follow in the same order', (quality, pick, rest) => {
    const { media, alternatives } = selectFormat('builtin', ladder, 'auto', quality);
    expect(media.url).toBe(pick);
    expect(urls(alternatives)).toEqual(rest);
  });

  it('picks the shortest when every known height is taller than asked', () => {
    expect(selectFormat('builtin', [f('a', { height: 1080 }), f('b', { height: 720 })], 'auto', '480').media.url).toBe('b');
  });

  it('ranks unknown heights below known ones that fit, but uses them before taller ones', () => {
    expect(selectFormat('builtin', [f('u'), f('k', { height: 480 })], 'auto', '720').media.url).toBe('k');
    expect(selectFormat('builtin', [f('u'), f('k', { height: 1080 })], 'auto', '720').media.url).toBe('u');
    const max = selectFormat('builtin', [f('u'), f('k', { height: 360 })], 'auto', 'max');
    expect([max.media.url, ...urls(max.alternatives)]).toEqual(['k', 'u']);
  });

  it('at equal heights prefers mp4, then webm, then other files, then manifests', () => {
    const pick = selectFormat(
      'builtin',
      [
        f('hls', { height: 720, container: 'm3u8' }),
        f('dash', { height: 720, container: 'mpd' }),
        f('mov', { height: 720, container: 'mov' }),
        f('webm', { height: 720, container: 'webm' }),
        f('mp4', { height: 720 }),
      ],
      'auto',
      '720',
    );
    expect(pick.media.url).toBe('mp4');
    expect(urls(pick.alternatives)).toEqual(['webm', 'mov', 'hls', 'dash']);
  });

  it('lists each URL once', () => {
    const { alternatives } = selectFormat(
      'builtin',
      [f('x', { height: 720 }), f('x', { height: 720 }), f('y', { height: 480 })],
      'auto',
      '720',
    );
    expect(urls(alternatives)).toEqual(['y']);
  });
});

describe('selectFormat: mode auto', () => {
  it('prefers a video with sound, counting a video-only variant that carries its audio track', () => {
    const track = a('track.m4a');
    const { media, alternatives } = selectFormat(
      'builtin',
      [
        f('silent1080', { height: 1080, hasAudio: false }),
        f('variant720', { height: 720, hasAudio: false, audio: track }),
        f('muxed480', { height: 480 }),
      ],
      'auto',
      '1080',
    );
    expect(media).toEqual(f('variant720', { height: 720, hasAudio: false, audio: track }));
    expect(urls(alternatives)).toEqual(['muxed480', 'silent1080']);
  });

  it('takes a silent video when that is all there is', () => {
    expect(selectFormat('builtin', [f('s', { hasAudio: false })], 'auto', '720').media.url).toBe('s');
  });

  it('returns the audio of a page without video', () => {
    const { media, alternatives } = selectFormat(
      'builtin',
      [a('ep.ogg', { container: 'ogg' }), a('ep.mp3', { container: 'mp3' }), a('ep.m4a')],
      'auto',
      '720',
    );
    expect(media.url).toBe('ep.m4a');
    expect(urls(alternatives)).toEqual(['ep.ogg', 'ep.mp3']);
  });

  it('fails with no_media when there is neither video nor audio', () => {
    expect(failure([f('pic.jpg', { kind: 'image', container: 'jpg', hasAudio: false, hasVideo: false })], 'auto').kind).toBe('no_media');
    expect(failure([], 'auto').kind).toBe('no_media');
  });
});

describe('selectFormat: mode audio', () => {
  it('takes an audio-only format over any video', () => {
    const { media, alternatives } = selectFormat('builtin', [...ladder, a('ep.mp3', { container: 'mp3' }), a('ep.m4a')], 'audio', '720');
    expect(media).toEqual(a('ep.m4a'));
    expect(urls(alternatives)).toEqual(['ep.mp3']);
  });

  it('falls back to the separate audio track of a video variant, listed once', () => {
    const track = a('https://cdn.example/audio/en.m4a');
    const variants = [
      f('v1080', { height: 1080, hasAudio: false, audio: track }),
      f('v720', { height: 720, hasAudio: false, audio: track }),
    ];
    const { media, alternatives } = selectFormat('builtin', variants, 'audio', '1080');
    expect(media).toBe(track);
    expect(alternatives).toEqual([]);
  });

  it('takes the sound of muxed videos when there is no audio-only format: derived audio, by quality', () => {
    const { media, alternatives } = selectFormat('builtin', [...ladder, f('unknown', { hasAudio: null })], 'audio', '720');
    expect(media).toMatchObject({ url: 'v720', kind: 'audio', derived: 'audio', hasAudio: true, hasVideo: false, height: null });
    expect(urls(alternatives)).toEqual(['v360', 'v1080', 'v2160']);
    expect(alternatives.every((x) => x.derived === 'audio')).toBe(true);
  });

  it('fails with no_media when no video is known to have sound', () => {
    const err = failure([f('unknown', { hasAudio: null }), f('silent', { hasAudio: false })], 'audio');
    expect(err.kind).toBe('no_media');
    expect(err.provider).toBe('builtin');
  });
});

describe('selectFormat: mode mute', () => {
  it('takes a video without sound, by quality, without its companion track', () => {
    const track = a('track.m4a');
    const { media, alternatives } = selectFormat(
      'builtin',
      [...ladder, f('silent1080', { height: 1080, hasAudio: false, audio: track }), f('silent480', { height: 480, hasAudio: false })],
      'mute',
      '720',
    );
    expect(media).toEqual(f('silent480', { height: 480, hasAudio: false, audio: null }));
    expect(urls(alternatives)).toEqual(['silent1080', 'v720', 'v360', 'v1080', 'v2160']);
    expect(alternatives[0].audio).toBeNull();
  });

  it('takes a video with sound to be silenced when none is silent: derived mute, by quality', () => {
    const { media, alternatives } = selectFormat('builtin', ladder, 'mute', '720');
    expect(media).toMatchObject({ url: 'v720', kind: 'video', derived: 'mute', hasAudio: false, audio: null });
    expect(urls(alternatives)).toEqual(['v360', 'v1080', 'v2160']);
  });

  it('fails with no_media saying no silent format exists when nothing is known to be silent or to have sound', () => {
    const err = failure([f('unknown', { hasAudio: null })], 'mute');
    expect(err.kind).toBe('no_media');
    expect(err.message).toMatch(/No silent format exists/);
    expect(err.message).toMatch(/mode "auto"/);
  });

  it('never takes a video whose sound is unknown for a silent one', () => {
    const err = failure([f('unknown', { hasAudio: null })], 'mute');
    expect(err.message).toMatch(/No silent format exists/);
  });
});

describe('selectFormat: honest sound flags in mode auto', () => {
  it('prefers known sound, then unknown, then known silence, each by quality', () => {
    const list = [
      f('silent720', { height: 720, hasAudio: false }),
      f('unknown480', { height: 480, hasAudio: null }),
      f('sound360', { height: 360 }),
    ];
    const { media, alternatives } = selectFormat('builtin', list, 'auto', '720');
    expect(media.url).toBe('sound360');
    expect(urls(alternatives)).toEqual(['unknown480', 'silent720']);
  });

  it('fails with no_media on an audio-only page', () => {
    expect(failure([a('ep.mp3')], 'mute').kind).toBe('no_media');
  });
});
