import { codecsOfType, streamsOfCodecs } from '../../../src/providers/parse/codecs.js';
import { ManifestError, manifestKind, readDash, readHls } from '../../../src/providers/parse/manifest.reader.js';

const pick = (f: { url: string; kind: string; height: number | null; hasAudio: boolean | null; audio?: { url: string } | null }) => [
  f.url,
  f.kind,
  f.height,
  f.hasAudio,
  f.audio?.url ?? null,
];

describe('codecs', () => {
  it.each([
    ['video/mp4; codecs="avc1.42E01E, mp4a.40.2"', 'avc1.42E01E,mp4a.40.2', true, true],
    ["video/webm; codecs='vp9'", 'vp9', false, true],
    ['video/webm;codecs=vp8,vorbis', 'vp8,vorbis', true, true],
    ['audio/mp4; codecs="mp4a.40.5"', 'mp4a.40.5', true, false],
    ['video/mp4; codecs="hvc1.1.6.L93.B0, ec-3"', 'hvc1.1.6.L93.B0,ec-3', true, true],
    ['video/mp4; codecs="avc1.64001f, wvtt"', 'avc1.64001f,wvtt', false, true],
  ])('%s lists %s: sound %s, picture %s', (type, codecs, hasAudio, hasVideo) => {
    expect(codecsOfType(type)).toBe(codecs);
    expect(streamsOfCodecs(codecsOfType(type))).toEqual({ hasAudio, hasVideo });
  });

  it('knows nothing without a list, and nothing for certain about a codec it does not know', () => {
    expect(codecsOfType('video/mp4')).toBeNull();
    expect(streamsOfCodecs(null)).toEqual({ hasAudio: null, hasVideo: null });
    expect(streamsOfCodecs('avc1.4d401f,zzz9')).toEqual({ hasAudio: null, hasVideo: true });
  });
});

describe('readHls', () => {
  const base = 'https://cdn.example/v/master.m3u8';

  it('reads variants, skips I-frame playlists, and gives video-only variants their default audio rendition', () => {
    const text = `\uFEFF#EXTM3U
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="English",LANGUAGE="en",DEFAULT=YES,URI="audio/en.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="Deutsch",LANGUAGE="de",DEFAULT=NO,URI="audio/de.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=2000000,RESOLUTION=1920x1080,CODECS="avc1.640028,mp4a.40.2",AUDIO="aac"
1080/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=1280x720,CODECS="avc1.64001f,mp4a.40.2",AUDIO="aac"
https://other.example/720/index.m3u8
#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100000,RESOLUTION=1280x720,CODECS="avc1.64001f",URI="iframes.m3u8"
`;
    const reading = readHls(text, base);
    expect(reading.formats.map(pick)).toEqual([
      ['https://cdn.example/v/1080/index.m3u8', 'video', 1080, false, 'https://cdn.example/v/audio/en.m3u8'],
      ['https://other.example/720/index.m3u8', 'video', 720, false, 'https://cdn.example/v/audio/en.m3u8'],
      ['https://cdn.example/v/audio/en.m3u8', 'audio', null, true, null],
      ['https://cdn.example/v/audio/de.m3u8', 'audio', null, true, null],
    ]);
    expect(reading.formats[0]).toMatchObject({ bitrate: 2000000, codecs: 'avc1.640028', width: 1920 });
    expect(reading.formats[2].codecs).toBe('mp4a.40.2');
    expect(reading.manifest).toMatchObject({ url: base, container: 'm3u8', kind: 'video', hasAudio: true, height: null });
  });

  it('takes a rendition without a URI as audio muxed into the variant, and an audio-only variant as audio', () => {
    const text = `#EXTM3U
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="muxed",NAME="Main",DEFAULT=YES
#EXT-X-STREAM-INF:BANDWIDTH=900000,RESOLUTION=1280x720,CODECS="avc1.64001f,mp4a.40.2",AUDIO="muxed"
720.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.2"
audio-only.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=500000,RESOLUTION=854x480
480.m3u8
`;
    expect(readHls(text, base).formats.map(pick)).toEqual([
      ['https://cdn.example/v/720.m3u8', 'video', 720, true, null],
      ['https://cdn.example/v/audio-only.m3u8', 'audio', null, true, null],
      ['https://cdn.example/v/480.m3u8', 'video', 480, null, null], // no CODECS: sound unknown
    ]);
  });

  it('reads a media playlist as one format with its length and first segment', () => {
    const text = `#EXTM3U
#EXT-X-TARGETDURATION:4
#EXT-X-MAP:URI="init.mp4"
#EXTINF:4.0,
seg1.m4s
#EXTINF:2.5,
seg2.m4s
#EXT-X-ENDLIST
`;
    const reading = readHls(text, base);
    expect(reading.formats).toEqual([]);
    expect(reading.manifest).toMatchObject({ url: base, durationSeconds: 6.5, hasAudio: null });
    expect(reading.firstSegment).toEqual({
      url: 'https://cdn.example/v/seg1.m4s',
      init: 'https://cdn.example/v/init.mp4',
      durationSeconds: 4,
    });
  });

  it('refuses what is not a playlist, and a master without a playable variant', () => {
    expect(() => readHls('<html>nope</html>', base)).toThrow(ManifestError);
    expect(() => readHls('#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\ndata:text/plain,x\n', base)).toThrow(ManifestError);
    expect(manifestKind('<?xml version="1.0"?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011">')).toBe('mpd');
    expect(manifestKind('#EXTM3U')).toBe('m3u8');
    expect(manifestKind('<html>')).toBeNull();
  });
});

describe('readDash', () => {
  const base = 'https://cdn.example/d/manifest.mpd';
  const onDemand = `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT1M2.5S" minBufferTime="PT1S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
 <Period id="0">
  <AdaptationSet id="0" contentType="video" mimeType="video/mp4">
   <Representation id="v1" bandwidth="2000000" codecs="avc1.640028" width="1920" height="1080"><BaseURL>v1080.mp4</BaseURL><SegmentBase indexRange="800-900"><Initialization range="0-799"/></SegmentBase></Representation>
   <Representation id="v2" bandwidth="800000" codecs="avc1.64001f" width="1280" height="720"><BaseURL>https://media.example/v720.mp4</BaseURL><SegmentBase indexRange="800-900"><Initialization range="0-799"/></SegmentBase></Representation>
  </AdaptationSet>
  <AdaptationSet id="1" contentType="audio" mimeType="audio/mp4" lang="en">
   <Representation id="a1" bandwidth="64000" codecs="mp4a.40.2"><BaseURL>a64.mp4</BaseURL><SegmentBase indexRange="700-800"><Initialization range="0-699"/></SegmentBase></Representation>
   <Representation id="a2" bandwidth="128000" codecs="mp4a.40.2"><BaseURL>a128.mp4</BaseURL><SegmentBase indexRange="700-800"><Initialization range="0-699"/></SegmentBase></Representation>
  </AdaptationSet>
 </Period>
</MPD>`;

  it('makes one-file representations formats, video-only ones carrying the best audio', () => {
    const reading = readDash(onDemand, base);
    expect(reading.formats.map(pick)).toEqual([
      ['https://cdn.example/d/v1080.mp4', 'video', 1080, false, 'https://cdn.example/d/a128.mp4'],
      ['https://media.example/v720.mp4', 'video', 720, false, 'https://cdn.example/d/a128.mp4'],
      ['https://cdn.example/d/a128.mp4', 'audio', null, true, null],
      ['https://cdn.example/d/a64.mp4', 'audio', null, true, null],
    ]);
    expect(reading.formats[0]).toMatchObject({ container: 'mp4', bitrate: 2000000, codecs: 'avc1.640028', durationSeconds: 62.5 });
    expect(reading.formats[2].container).toBe('m4a');
    expect(reading.manifest).toMatchObject({ url: base, container: 'mpd', hasAudio: true, durationSeconds: 62.5 });
  });

  it('keeps segmented representations behind the manifest', () => {
    const segmented = onDemand.replace(
      /<BaseURL>[^<]*<\/BaseURL><SegmentBase[^>]*><Initialization[^>]*\/><\/SegmentBase>/g,
      '<SegmentTemplate media="$RepresentationID$-$Number$.m4s" initialization="$RepresentationID$-init.mp4" duration="2" startNumber="1"/>',
    );
    const reading = readDash(segmented, base);
    expect(reading.formats).toEqual([]);
    expect(reading.manifest).toMatchObject({ url: base, kind: 'video', hasAudio: true });
  });

  it('refuses what is not a DASH manifest', () => {
    expect(() => readDash('#EXTM3U', base)).toThrow(ManifestError);
  });
});
