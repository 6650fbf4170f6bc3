import { classifyDirectMedia } from '../../../src/providers/parse/direct-media.js';

describe('classifyDirectMedia', () => {
  it('describes a video file fully', () => {
    expect(classifyDirectMedia('video/mp4', 'https://cdn.example/v/clip_720p.mp4?token=abc')).toEqual({
      url: 'https://cdn.example/v/clip_720p.mp4?token=abc',
      kind: 'video',
      container: 'mp4',
      width: null,
      height: 720,
      bitrate: null,
      codecs: null,
      durationSeconds: null,
      // Whether a file has sound is unknown until it is probed.
      hasAudio: null,
      hasVideo: true,
      expiresAt: null,
      headers: null,
    });
  });

  it('describes an audio file as sound without picture', () => {
    expect(classifyDirectMedia('audio/mpeg', 'https://cdn.example/ep/480.mp3')).toEqual({
      url: 'https://cdn.example/ep/480.mp3',
      kind: 'audio',
      container: 'mp3',
      width: null,
      height: null,
      bitrate: null,
      codecs: null,
      durationSeconds: null,
      hasAudio: true,
      hasVideo: false,
      expiresAt: null,
      headers: null,
    });
  });

  it.each([
    ['video/webm', 'https://x.example/a', 'video', 'webm'],
    ['video/quicktime', 'https://x.example/a', 'video', 'mov'],
    ['video/x-msvideo', 'https://x.example/a.avi', 'video', 'msvideo'],
    ['audio/mpeg; charset=binary', 'https://x.example/a', 'audio', 'mp3'],
    ['audio/mp4', 'https://x.example/a', 'audio', 'm4a'],
    ['audio/ogg', 'https://x.example/a', 'audio', 'ogg'],
    ['Application/X-MpegURL', 'https://x.example/live/index', 'video', 'm3u8'],
    ['application/vnd.apple.mpegurl', 'https://x.example/master', 'video', 'm3u8'],
    ['audio/x-mpegurl', 'https://x.example/master', 'video', 'm3u8'],
    ['application/dash+xml', 'https://x.example/manifest', 'video', 'mpd'],
    ['image/jpeg', 'https://x.example/p', 'image', 'jpg'],
    ['image/webp', 'https://x.example/p', 'image', 'webp'],
    ['application/octet-stream', 'https://x.example/clip.webm', 'video', 'webm'],
    ['binary/octet-stream', 'https://s3.example/bucket/master.m3u8?X-Amz-Signature=1', 'video', 'm3u8'],
    ['application/octet-stream', 'https://x.example/stream.mpd', 'video', 'mpd'],
    ['application/octet-stream', 'https://x.example/ep.M4A', 'audio', 'm4a'],
    [null, 'https://x.example/song.flac', 'audio', 'flac'],
  ])('%s at %s is %s/%s', (type, url, kind, container) => {
    expect(classifyDirectMedia(type, url)).toMatchObject({
      url,
      kind,
      container,
      hasVideo: kind === 'video',
      hasAudio: kind === 'audio' ? true : kind === 'image' ? false : null,
    });
  });

  it.each([
    ['text/html; charset=utf-8', 'https://x.example/video.mp4'],
    ['application/xhtml+xml', 'https://x.example/a.m3u8'],
    ['text/plain', 'https://x.example/a.m3u8'],
    ['application/json', 'https://x.example/a.mp3'],
    ['application/octet-stream', 'https://x.example/download?id=4'],
    ['application/octet-stream', 'https://x.example/archive.zip'],
    [null, 'https://x.example/watch?v=1'],
    [null, 'https://x.example/page.mp4/'],
    [null, 'not a url'],
  ])('%s at %s is not media', (type, url) => {
    expect(classifyDirectMedia(type, url)).toBeNull();
  });
});
