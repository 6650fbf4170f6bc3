import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API keys look like `mg_live_<publicId>_<secret><checksum>`: the public id finds the row, the
 * secret (32 base62 characters, about 190 bits) is only ever stored as an HMAC, and a CRC32
 * checksum lets a mistyped or invented key be refused before any database query.
 */
export const KEY_PREFIX = 'mg_live_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const PUBLIC_ID_LENGTH = 12;
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}([0-9A-Za-z]{${PUBLIC_ID_LENGTH}})_([0-9A-Za-z]{${SECRET_LENGTH + CHECKSUM_LENGTH}})$`);

export interface ParsedKey {
  publicId: string;
  key: string;
}

function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}

function base62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

function checksum(body: string): string {
  return base62(crc32(body), CHECKSUM_LENGTH);
}

/** Makes a new key. The caller shows `key` once and stores only its hash. */
export function generateKey(): ParsedKey {
  const publicId = randomBase62(PUBLIC_ID_LENGTH);
  const body = `${KEY_PREFIX}${publicId}_${randomBase62(SECRET_LENGTH)}`;
  return { publicId, key: body + checksum(body) };
}

/** Reads a presented key; null when it is not of our shape or its checksum is wrong. */
export function parseKey(presented: string): ParsedKey | null {
  const m = KEY_PATTERN.exec(presented);
  if (!m) return null;
  const body = presented.slice(0, -CHECKSUM_LENGTH);
  if (checksum(body) !== presented.slice(-CHECKSUM_LENGTH)) return null;
  return { publicId: m[1], key: presented };
}

/** HMAC-SHA-256 of the whole key with the server's pepper: a leaked table alone does not let anyone check guesses. */
export function hashKey(key: string, pepper: string): Buffer {
  return createHmac('sha256', pepper).update(key).digest();
}

/** Constant-time comparison of a presented key against a stored hash. */
export function keyMatches(key: string, storedHash: Buffer, pepper: string): boolean {
  const candidate = hashKey(key, pepper);
  return candidate.length === storedHash.length && timingSafeEqual(candidate, storedHash);
}
