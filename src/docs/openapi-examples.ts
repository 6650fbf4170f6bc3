/** Example bodies of the OpenAPI document: one harbour video, parsed, transcribed and queued. */

export const SRT_EXAMPLE = '1\n00:00:00,000 --> 00:00:02,480\nThe harbour at dawn.\n\n2\n00:00:02,480 --> 00:00:05,100\nBoats head out.\n';
export const VTT_EXAMPLE =
  'WEBVTT\n\n1\n00:00:00.000 --> 00:00:02.480\nThe harbour at dawn.\n\n2\n00:00:02.480 --> 00:00:05.100\nBoats head out.\n';
export const PARSE_EXAMPLE = {
  id: '0b7e2f52-4c1d-4a8e-9f3a-2d6c5b4a3e21',
  status: 'SUCCEEDED',
  url: 'https://video.example/watch/harbour',
  mode: 'auto',
  quality: '1080',
  media: {
    url: 'https://cdn.video.example/harbour-1080.mp4',
    kind: 'video',
    container: 'mp4',
    width: 1920,
    height: 1080,
    bitrate: 4_500_000,
    codecs: 'avc1.640028,mp4a.40.2',
    durationSeconds: 12.5,
    hasAudio: true,
    hasVideo: true,
    expiresAt: null,
    headers: null,
    delivery: 'direct',
  },
  alternatives: [],
  items: [],
  itemsTotal: 0,
  cover: { url: 'https://cdn.video.example/harbour.jpg', width: 1280, height: 720 },
  metadata: {
    title: 'Harbour at dawn',
    author: 'Ana',
    durationSeconds: 12.5,
    publishedAt: '2026-01-31T06:00:00Z',
    description: null,
    site: 'Video Example',
  },
  provider: 'builtin',
  credits: { charged: 1, balance: 41 },
};

export const TRANSCRIPTION_EXAMPLE = {
  id: '5d9c1e0a-7b3f-4f62-8a1d-9e4b2c6f0a13',
  status: 'SUCCEEDED',
  mediaUrl: 'https://cdn.video.example/harbour-1080.mp4',
  language: 'en',
  durationSeconds: 61.2,
  text: 'The harbour at dawn. Boats head out.',
  segments: [
    { index: 1, start: 0, end: 2.48, text: 'The harbour at dawn.', speaker: null },
    { index: 2, start: 2.48, end: 5.1, text: 'Boats head out.', speaker: null },
  ],
  provider: 'openai',
  credits: { charged: 2, balance: 39 },
};

export const JOB_EXAMPLE = {
  id: '5d9c1e0a-7b3f-4f62-8a1d-9e4b2c6f0a13',
  operation: 'TRANSCRIBE',
  status: 'QUEUED',
  progress: 0,
  input: { mediaUrl: 'https://cdn.video.example/harbour-1080.mp4', language: 'en' },
  result: null,
  error: null,
  requestId: '6f1d2c3b-8a47-4e0e-9d55-3c2b1a0f9e87',
  provider: null,
  creditsHeld: 1,
  creditsCharged: 0,
  streamedBytes: 0,
  createdAt: '2026-01-31T06:00:00.000Z',
  startedAt: null,
  finishedAt: null,
  deadlineAt: '2026-01-31T07:00:00.000Z',
  webhook: null,
};

export const CANCELED_JOB_EXAMPLE = {
  ...JOB_EXAMPLE,
  status: 'CANCELED',
  progress: 0.2,
  error: { code: 'CANCELED', message: 'Canceled by the caller.' },
  creditsHeld: 0,
  startedAt: '2026-01-31T06:00:01.000Z',
  finishedAt: '2026-01-31T06:00:09.000Z',
};
