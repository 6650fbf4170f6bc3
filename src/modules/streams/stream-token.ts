import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';

import type { StreamSource } from '../../media/stream-delivery.js';
import type { StreamProcessing } from '../../media/stream-recipe.js';

export type { StreamSource } from '../../media/stream-delivery.js';

/** Everything a stream URL stands for, sealed so the caller can neither read nor change it. */
export interface StreamGrant {
  jobId: string;
  accountId: string;
  /** The API key the parse was made with: a stream of a revoked key's parse is refused. */
  apiKeyId: string | null;
  /** Whether the parse needed a membership (an API key, or a members-only quality): checked again at open. */
  membership: boolean;
  sources: StreamSource[];
  processing: StreamProcessing;
  /** For the file name. */
  title: string | null;
  /** What the answer is: video (fragmented MP4 or the source's type) or audio. */
  kind: 'video' | 'audio';
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

/** The key's purpose, so that no other use of the pepper can make or read a stream token. */
const INFO = 'mediagate stream token v1';
const VERSION = 1;

/**
 * Seals and opens stream tokens: AES-256-GCM over the deflated JSON, with a key derived from the
 * server's pepper by HKDF (RFC 5869), so every instance with the same pepper opens what another
 * sealed, and nobody else can read the sources or headers inside or forge one.
 */
export class StreamTokens {
  private readonly key: Buffer;

  constructor(pepper: string) {
    this.key = Buffer.from(hkdfSync('sha256', pepper, Buffer.alloc(0), INFO, 32));
  }

  seal(grant: StreamGrant): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const plain = deflateRawSync(Buffer.from(JSON.stringify({ v: VERSION, ...grant })));
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return sealed.toString('base64url');
  }

  /** The grant inside a token, or null when it was not sealed here (forged, altered, truncated, another version). */
  open(token: string): StreamGrant | null {
    if (!/^[A-Za-z0-9_-]{40,16000}$/.test(token)) return null;
    const sealed = Buffer.from(token, 'base64url');
    // One spelling per token: trailing characters base64 would ignore make another URL, refused.
    if (sealed.length < 12 + 16 + 1 || sealed.toString('base64url') !== token) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(0, 12));
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      const plain = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
      const { v, ...grant } = JSON.parse(inflateRawSync(plain, { maxOutputLength: 1 << 20 }).toString('utf8')) as StreamGrant & {
        v: number;
      };
      return v === VERSION ? grant : null;
    } catch {
      return null;
    }
  }
}
