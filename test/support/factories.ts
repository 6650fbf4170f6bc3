import { randomUUID } from 'node:crypto';
import type { JobOperation } from '../../src/modules/jobs/job.entity.js';
import { OPERATOR } from '../../src/modules/principal.js';
import type { FakeSite } from '../fakes/site.fake.js';
import type { Harness } from './harness.js';

/** An account made for a test, with its first key. */
export interface TestAccount {
  accountId: string;
  key: string;
  keyId: string;
}

/** How a test's job ends: the ledger entries each leaves are those of the real transitions. */
export type TestJobStatus = 'SUCCEEDED' | 'FAILED' | 'CANCELED' | 'RUNNING' | 'QUEUED';

export interface TestJobOptions {
  operation?: JobOperation;
  status?: TestJobStatus;
  /** The hold, and on success the credits charged (default 1). */
  charged?: number;
  input?: Record<string, unknown>;
  /** On success: the result stored (default `{ ok: true }`). */
  result?: Record<string, unknown>;
  /** On failure or cancel: the error (default PROVIDER_ERROR). */
  error?: { code: string; message: string };
  /** The key that opened it (none: the operator). */
  keyId?: string | null;
  /** Seconds until its deadline (default 60): past it, the sweeper fails an open job. */
  deadlineSeconds?: number;
}

/**
 * The data a test needs, made through the services as the doors make it (no rows written by hand):
 * accounts with keys, more keys, and jobs taken through the task ledger's own transitions (open,
 * then succeed or fail), so their credit entries are the real ones.
 */
export function factories(h: Harness) {
  return {
    /** An account with credits, a membership (unless `member: false`), roles, and a key with `scopes`. */
    async account(
      opts: { credits?: number; member?: boolean; roles?: string[]; scopes?: string[]; name?: string } = {},
    ): Promise<TestAccount> {
      const acc = await h.services.accounts.create(OPERATOR, {
        name: opts.name ?? 'Test account',
        credits: opts.credits ?? 10,
        membershipDays: opts.member === false ? undefined : 30,
        roles: opts.roles,
      });
      const created = await h.services.apiKeys.create(OPERATOR, acc.id, 'test', opts.scopes);
      return { accountId: acc.id, key: created.key, keyId: created.apiKey.id };
    },

    /** Another key of `account`, with `scopes` (all the default ones unless said). */
    async key(account: { accountId: string }, opts: { scopes?: string[]; name?: string } = {}): Promise<{ key: string; keyId: string }> {
      const created = await h.services.apiKeys.create(OPERATOR, account.accountId, opts.name ?? 'test', opts.scopes);
      return { key: created.key, keyId: created.apiKey.id };
    },

    /** A job of `account` without a provider: held, then succeeded (charged), failed or canceled (released), or left open. */
    async job(account: { accountId: string }, opts: TestJobOptions = {}): Promise<string> {
      const jobId = randomUUID();
      const status = opts.status ?? 'SUCCEEDED';
      await h.services.tasks.openJob({
        jobId,
        accountId: account.accountId,
        apiKeyId: opts.keyId ?? null,
        operation: opts.operation ?? 'PARSE',
        input: opts.input ?? {},
        amount: opts.charged ?? 1,
        deadlineAt: new Date(Date.now() + (opts.deadlineSeconds ?? 60) * 1000),
        status: status === 'QUEUED' ? 'QUEUED' : 'RUNNING',
      });
      if (status === 'SUCCEEDED') await h.services.tasks.succeed(jobId, opts.result ?? { ok: true }, 'test');
      if (status === 'FAILED' || status === 'CANCELED') {
        const error = opts.error ?? { code: 'PROVIDER_ERROR', message: 'x' };
        await h.services.tasks.fail(jobId, status, error.code, error.message);
      }
      return jobId;
    },
  };
}

export type Factories = ReturnType<typeof factories>;

/** A media element of a page: its URL, and the type attribute a page gives it (none unless said). */
export type PageMedia = string | { src: string; type?: string };

/** What a video page holds, as a browser receives it. */
export interface PageSpec {
  title?: string;
  /** `<video>` elements, each with one `<source>`. */
  video?: PageMedia | PageMedia[];
  /** `<audio>` elements, each with one `<source>`. */
  audio?: PageMedia | PageMedia[];
  /** Open Graph tags, without the `og:` prefix (`{ video: url, 'video:type': 'video/mp4' }`). */
  og?: Record<string, string>;
  /** Other `<meta property>` tags, named whole (`video:duration`). */
  meta?: Record<string, string>;
  /** A JSON-LD block in the head. */
  jsonLd?: unknown;
  /** More markup at the end of the body. */
  body?: string;
}

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
const list = (m: PageMedia | PageMedia[] | undefined) => (m === undefined ? [] : Array.isArray(m) ? m : [m]);
const element = (tag: 'video' | 'audio', m: PageMedia) => {
  const { src, type } = typeof m === 'string' ? { src: m, type: undefined } : m;
  return `<${tag}><source src="${escapeHtml(src)}"${type ? ` type='${type}'` : ''}></${tag}>`;
};

/** The HTML of a page as `spec` describes it. */
export function pageHtml(spec: PageSpec): string {
  const meta = [...Object.entries(spec.og ?? {}).map(([k, v]) => [`og:${k}`, v]), ...Object.entries(spec.meta ?? {})].map(
    ([k, v]) => `<meta property="${k}" content="${escapeHtml(v)}">`,
  );
  const head = [
    ...(spec.title !== undefined ? [`<title>${escapeHtml(spec.title)}</title>`] : []),
    ...meta,
    ...(spec.jsonLd !== undefined ? [`<script type="application/ld+json">${JSON.stringify(spec.jsonLd)}</script>`] : []),
  ].join('');
  const body = [
    ...list(spec.video).map((m) => element('video', m)),
    ...list(spec.audio).map((m) => element('audio', m)),
    spec.body ?? '',
  ].join('');
  return `<html><head>${head}</head><body>${body}</body></html>`;
}

/** Serves a page made from `spec` at `path` on the fake site; returns its URL. */
export function page(site: FakeSite, path: string, spec: PageSpec): string {
  site.page(path, pageHtml(spec));
  return `${site.origin}${path}`;
}

/**
 * A page naming one video in two renditions, 1080 and 720 (on cdn.example), by Open Graph tags
 * alone: a parse answers from the tags, 720 unless 1080 is asked for.
 */
export const RENDITIONS_PAGE = `<html><head>
      <meta property="og:video" content="https://cdn.example/v-1080.mp4"><meta property="og:video:type" content="video/mp4"><meta property="og:video:height" content="1080">
      <meta property="og:video" content="https://cdn.example/v-720.mp4"><meta property="og:video:type" content="video/mp4"><meta property="og:video:height" content="720">
    </head></html>`;
