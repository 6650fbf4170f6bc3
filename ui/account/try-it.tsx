import { useRef, useState } from 'preact/hooks';
import { PARSE, TRANSCRIBE, download, gql, messageOf, type ParseResult, type Transcription } from './api.js';
import { credits } from './format.js';

/** Forms that run a parse or a transcription as the signed-in account and show the result. */
export function TryItSection({ onCharged }: { onCharged: () => void }) {
  const [url, setUrl] = useState('');
  const [mode, setMode] = useState('auto');
  const [quality, setQuality] = useState('720');
  const [audioFormat, setAudioFormat] = useState('best');
  const [stream, setStream] = useState(false);
  const [mediaUrl, setMediaUrl] = useState('');
  const [language, setLanguage] = useState('');
  const [parsed, setParsed] = useState<ParseResult | null>(null);
  const [transcript, setTranscript] = useState<Transcription | null>(null);
  const [busy, setBusy] = useState<'parse' | 'transcribe' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const result = useRef<HTMLElement>(null);
  const alert = useRef<HTMLParagraphElement>(null);

  const run = async (which: 'parse' | 'transcribe', work: () => Promise<void>) => {
    setBusy(which);
    setError(null);
    try {
      await work();
      onCharged();
      setTimeout(() => result.current?.focus(), 0);
    } catch (err) {
      setError(messageOf(err));
      setTimeout(() => alert.current?.focus(), 0);
    } finally {
      setBusy(null);
    }
  };

  return (
    <section id="try" class="card" aria-labelledby="try-title">
      <h2 id="try-title">Try it</h2>
      <form
        class="try"
        onSubmit={(e) => {
          e.preventDefault();
          void run('parse', async () => {
            setTranscript(null);
            const input = { url, mode, quality, ...(mode === 'audio' ? { audioFormat } : {}), ...(stream ? { stream } : {}) };
            setParsed((await gql(PARSE, { input })).parse);
          });
        }}
      >
        <h3>Parse a page</h3>
        <label>
          Page URL{' '}
          <input
            name="parse-url"
            type="url"
            required
            value={url}
            onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
            placeholder="https://…"
          />
        </label>
        <label>
          Mode
          <select name="mode" value={mode} onChange={(e) => setMode((e.target as HTMLSelectElement).value)}>
            <option value="auto">auto</option>
            <option value="audio">audio</option>
            <option value="mute">mute</option>
          </select>
        </label>
        <label>
          Quality
          <select name="quality" value={quality} onChange={(e) => setQuality((e.target as HTMLSelectElement).value)}>
            <option value="max">max</option>
            <option value="1080">1080</option>
            <option value="720">720</option>
            <option value="480">480</option>
          </select>
        </label>
        {mode === 'audio' && (
          <label>
            Audio file
            <select name="audio-format" value={audioFormat} onChange={(e) => setAudioFormat((e.target as HTMLSelectElement).value)}>
              <option value="best">best (the source’s codec)</option>
              <option value="mp3">mp3</option>
              <option value="opus">opus</option>
              <option value="m4a">m4a</option>
              <option value="wav">wav</option>
            </select>
          </label>
        )}
        <label class="check">
          <input type="checkbox" name="stream" checked={stream} onChange={(e) => setStream((e.target as HTMLInputElement).checked)} />{' '}
          Through the gateway
        </label>
        <button type="submit" disabled={busy !== null}>
          {busy === 'parse' ? 'Parsing…' : 'Parse'}
        </button>
      </form>
      <form
        class="try"
        onSubmit={(e) => {
          e.preventDefault();
          void run('transcribe', async () => {
            setParsed(null);
            const input = language.trim() ? { mediaUrl, language: language.trim() } : { mediaUrl };
            setTranscript((await gql(TRANSCRIBE, { input })).transcribe);
          });
        }}
      >
        <h3>Transcribe media</h3>
        <label>
          Media URL{' '}
          <input
            name="media-url"
            type="url"
            required
            value={mediaUrl}
            onInput={(e) => setMediaUrl((e.target as HTMLInputElement).value)}
            placeholder="https://…/talk.mp3"
          />
        </label>
        <label>
          Language (optional){' '}
          <input
            name="language"
            value={language}
            onInput={(e) => setLanguage((e.target as HTMLInputElement).value)}
            placeholder="en"
            maxLength={20}
          />
        </label>
        <button type="submit" disabled={busy !== null}>
          {busy === 'transcribe' ? 'Transcribing…' : 'Transcribe'}
        </button>
      </form>
      {error && (
        <p role="alert" class="error" tabIndex={-1} ref={alert}>
          {error}
        </p>
      )}
      {parsed && (
        <section class="result" tabIndex={-1} ref={result} data-testid="parse-result" aria-label="Parse result">
          <h3>{parsed.metadata.title ?? 'Result'}</h3>
          {parsed.cover && <img src={parsed.cover.url} alt={`Cover of ${parsed.metadata.title ?? 'the media'}`} class="cover" />}
          <dl class="facts">
            <dt>Media</dt>
            <dd>
              <a href={parsed.media.url} rel="noreferrer noopener" target="_blank">
                {parsed.media.url}
              </a>
            </dd>
            <dt>Delivery</dt>
            <dd>
              {parsed.media.delivery === 'stream'
                ? `streamed by the gateway${parsed.media.expiresAt ? ` until ${new Date(parsed.media.expiresAt).toLocaleTimeString()}` : ''}`
                : 'direct from the site'}
            </dd>
            <dt>Kind</dt>
            <dd>
              {parsed.media.kind}
              {parsed.media.container ? `, ${parsed.media.container}` : ''}
              {parsed.media.height ? `, ${parsed.media.height}p` : ''}
              {parsed.media.hasAudio === false ? ', no sound of its own' : ''}
            </dd>
            {parsed.media.audio && (
              <>
                <dt>Audio track</dt>
                <dd>{parsed.media.audio.url}</dd>
              </>
            )}
            {parsed.media.delivery === 'stream' && (
              <>
                <dt>Play</dt>
                <dd>
                  {parsed.media.kind === 'audio' ? (
                    // biome-ignore lint/a11y/useMediaCaption: any site's media; the gateway has no captions for it
                    <audio controls preload="none" src={parsed.media.url} data-testid="stream-player" />
                  ) : (
                    // biome-ignore lint/a11y/useMediaCaption: any site's media; the gateway has no captions for it
                    <video controls preload="none" src={parsed.media.url} class="player" data-testid="stream-player" />
                  )}
                </dd>
              </>
            )}
            <dt>Other formats</dt>
            <dd>{parsed.alternatives.length}</dd>
            <dt>Charged</dt>
            <dd>
              {credits(parsed.credits.charged)}; {credits(parsed.credits.balance)} left
            </dd>
          </dl>
        </section>
      )}
      {transcript && (
        <section class="result" tabIndex={-1} ref={result} data-testid="transcript-result" aria-label="Transcript">
          <h3>Transcript{transcript.language ? ` (${transcript.language})` : ''}</h3>
          <p class="transcript">{transcript.text || '(no speech)'}</p>
          <div class="row">
            <button
              type="button"
              onClick={() => download(`/api/transcriptions/${transcript.id}.srt`, 'transcript.srt').catch((e) => setError(messageOf(e)))}
            >
              Download SRT
            </button>
            <button
              type="button"
              class="secondary"
              onClick={() => download(`/api/transcriptions/${transcript.id}.vtt`, 'transcript.vtt').catch((e) => setError(messageOf(e)))}
            >
              Download WebVTT
            </button>
          </div>
          <p>
            Charged {credits(transcript.credits.charged)}; {credits(transcript.credits.balance)} left.
          </p>
        </section>
      )}
    </section>
  );
}
