import { crc32 } from 'node:zlib';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The public id of a key (`mg_live_<publicId>_…`): not a secret, it shows in logs and support tickets. */
export const publicIdOf = (key: string) => /^mg_live_([0-9A-Za-z]{12})_/.exec(key)![1];

/**
 * A key with this public id and a made-up secret, as anyone can make: the checksum is CRC32, public,
 * so it parses as a key and reaches authentication.
 */
export function forgedKey(publicId: string): string {
  const body = `mg_live_${publicId}_${'x'.repeat(32)}`;
  let n = crc32(body);
  let checksum = '';
  for (let i = 0; i < 6; i++) {
    checksum = ALPHABET[n % 62] + checksum;
    n = Math.floor(n / 62);
  }
  return body + checksum;
}
