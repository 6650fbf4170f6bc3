import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import { cutAudio } from '../media/audio-extraction.js';
import type { GuardedHttpClient } from '../net/guarded-client.js';
import { BuiltinParseProvider } from './parse/builtin.adapter.js';
import { CobaltParseProvider } from './parse/cobalt.adapter.js';
import { MediaProber } from './parse/media-prober.js';
import { ProbeBudget } from './parse/probe.budget.js';
import { YtdlpParseProvider } from './parse/ytdlp.adapter.js';
import type { ParseProvider } from './parse/parse.types.js';
import { AssemblyAiTranscriptionProvider } from './transcription/assemblyai.adapter.js';
import { DeepgramTranscriptionProvider } from './transcription/deepgram.adapter.js';
import { LocalTranscriptionProvider } from './transcription/local.adapter.js';
import { OpenAiTranscriptionProvider } from './transcription/openai.adapter.js';
import type { TranscriptionProvider } from './transcription/transcription.types.js';

/** The configured parse providers, in failover order (PARSE_PROVIDERS). */
export function buildParseProviders(config: Config, client: GuardedHttpClient, metrics?: Metrics): ParseProvider[] {
  // One budget for every probe of the process.
  const budget = new ProbeBudget(
    {
      maxBytes: config.probe.memoryBytes,
      maxProbes: config.probe.concurrency,
      maxPerAccount: config.probe.maxPerAccount,
      maxFfprobes: config.probe.ffprobeConcurrency,
    },
    { onChange: (state) => metrics?.probeBudget(state), onRefused: (why) => metrics?.probesSkipped.inc({ why }) },
  );
  metrics?.probeBudgetLimit(config.probe.memoryBytes);
  return config.parseProviders.map((name) => {
    switch (name) {
      case 'builtin':
        return new BuiltinParseProvider({
          client,
          pageMaxBytes: config.pageMaxBytes,
          manifestMaxBytes: config.manifestMaxBytes,
          maxItems: config.parseMaxItems,
          maxProbes: config.probe.maxCandidates,
          prober: new MediaProber({
            client,
            ffprobePath: config.ffprobePath,
            maxBytes: config.probe.maxBytes,
            timeoutMs: config.probe.timeoutMs,
            manifestMaxBytes: config.manifestMaxBytes,
            maxPartBytes: config.probe.maxPartBytes,
            budget,
            onRead: (reader, outcome) => metrics?.mediaReads.inc({ reader, outcome }),
            onReuse: (how) => metrics?.mediaReadReuses.inc({ how }),
          }),
        });
      case 'ytdlp':
        return new YtdlpParseProvider({
          path: config.ytdlpPath,
          allowHosts: config.fetchAllowHosts,
          timeoutMs: config.parseTimeoutMs,
          maxItems: config.parseMaxItems,
        });
      case 'cobalt':
        return new CobaltParseProvider({ apiUrl: config.cobalt.apiUrl!, apiKey: config.cobalt.apiKey, timeoutMs: config.parseTimeoutMs });
      default:
        throw new Error(`unknown parse provider ${name}`);
    }
  });
}

/** The configured transcription providers, in failover order (TRANSCRIBE_PROVIDERS). */
export function buildTranscriptionProviders(config: Config): TranscriptionProvider[] {
  return config.transcribeProviders.map((name) => {
    switch (name) {
      case 'openai':
        return new OpenAiTranscriptionProvider({
          baseUrl: config.openai.baseUrl,
          apiKey: config.openai.apiKey ?? undefined,
          model: config.openai.model,
          timeoutMs: config.transcribeTimeoutMs,
          maxUploadBytes: config.openai.maxUploadBytes,
          pieceSeconds: config.openai.pieceSeconds,
          concurrency: config.openai.concurrency,
          // Pieces go beside the prepared audio, in the task's own temporary folder.
          cut: async (audioPath, plans, first, signal) => {
            const dir = join(dirname(audioPath), 'pieces');
            await mkdir(dir, { recursive: true });
            return cutAudio(audioPath, dir, plans, { signal, ffmpegPath: config.ffmpegPath, first });
          },
        });
      case 'deepgram':
        return new DeepgramTranscriptionProvider({
          baseUrl: config.deepgram.baseUrl,
          apiKey: config.deepgram.apiKey!,
          model: config.deepgram.model,
          timeoutMs: config.transcribeTimeoutMs,
        });
      case 'assemblyai':
        return new AssemblyAiTranscriptionProvider({
          baseUrl: config.assemblyai.baseUrl,
          apiKey: config.assemblyai.apiKey!,
          timeoutMs: config.transcribeTimeoutMs,
          pollIntervalMs: config.assemblyai.pollIntervalMs,
        });
      case 'local':
        return new LocalTranscriptionProvider({
          pocketsphinxPath: config.pocketsphinxPath,
          ffmpegPath: config.ffmpegPath,
          timeoutMs: config.transcribeTimeoutMs,
        });
      default:
        throw new Error(`unknown transcription provider ${name}`);
    }
  });
}
