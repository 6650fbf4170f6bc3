import { useEffect, useRef, useState } from 'preact/hooks';
import { API_KEYS, CREATE_KEY, REVOKE_KEY, gql, messageOf, type ApiKey } from './api.js';
import { when } from './format.js';

const SCOPES = [
  ['parse', 'Parse pages'],
  ['transcribe', 'Transcribe media'],
  ['read', 'Read jobs and history'],
  ['keys', 'Manage keys and the webhook secret'],
] as const;

export function KeysSection() {
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['parse', 'transcribe', 'read']);
  const [created, setCreated] = useState<{ key: string; apiKey: ApiKey } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const secretBox = useRef<HTMLDivElement>(null);
  const confirmButton = useRef<HTMLButtonElement>(null);

  const load = () =>
    gql(API_KEYS).then(
      (r) => setKeys(r.apiKeys),
      (e) => setError(messageOf(e)),
    );
  useEffect(() => void load(), []);
  useEffect(() => secretBox.current?.focus(), [created]);
  useEffect(() => confirmButton.current?.focus(), [confirming]);

  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const r = await gql(CREATE_KEY, { name: name.trim() || 'default', scopes });
      setCreated(r.createApiKey);
      setCopied(false);
      setName('');
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const revoke = async (id: string) => {
    setError(null);
    try {
      await gql(REVOKE_KEY, { id });
      setConfirming(null);
      await load();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return (
    <section id="keys" class="card" aria-labelledby="keys-title">
      <h2 id="keys-title">API Keys</h2>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {created && (
        <div class="secret" tabIndex={-1} ref={secretBox} role="status">
          <p>
            <strong>Your new key “{created.apiKey.name}”.</strong> Copy it now: it will not be shown again. Keep it on servers only, never
            in a web page or a public repository.
          </p>
          <code data-testid="new-key">{created.key}</code>
          <button
            type="button"
            onClick={() =>
              navigator.clipboard?.writeText(created.key).then(
                () => setCopied(true),
                () => setCopied(false),
              )
            }
          >
            {copied ? 'Copied' : 'Copy'}
          </button>
          <button type="button" class="secondary" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      <form onSubmit={create} class="create-key">
        <label>
          Name{' '}
          <input
            name="key-name"
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
            placeholder="laptop"
            maxLength={100}
          />
        </label>
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.map(([scope, label]) => (
            <label key={scope} class="check">
              <input
                type="checkbox"
                name="scope"
                value={scope}
                checked={scopes.includes(scope)}
                onChange={(e) => setScopes((e.target as HTMLInputElement).checked ? [...scopes, scope] : scopes.filter((s) => s !== scope))}
              />
              {label} (<code>{scope}</code>)
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={!scopes.length}>
          Create key
        </button>
      </form>
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden">Your API keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Scopes</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {!keys.length && (
              <tr>
                <td colSpan={6}>No keys yet.</td>
              </tr>
            )}
            {keys.map((k) => (
              <tr key={k.id} data-key-id={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>…{k.last4}</code>
                </td>
                <td>{k.scopes.join(', ')}</td>
                <td>{when(k.createdAt)}</td>
                <td>{when(k.lastUsedAt)}</td>
                <td>
                  {k.revokedAt ? (
                    <>Revoked {when(k.revokedAt)}</>
                  ) : confirming === k.id ? (
                    // biome-ignore lint/a11y/useSemanticElements: an inline question in a table cell, where a fieldset's box would break the row
                    <span class="confirm" role="group" aria-label={`Revoke ${k.name}?`}>
                      Revoke “{k.name}”? Calls with it will fail at once.{' '}
                      <button type="button" class="danger" ref={confirmButton} onClick={() => void revoke(k.id)}>
                        Yes, revoke
                      </button>{' '}
                      <button type="button" class="secondary" onClick={() => setConfirming(null)}>
                        Cancel
                      </button>
                    </span>
                  ) : (
                    <button type="button" class="secondary" onClick={() => setConfirming(k.id)}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
