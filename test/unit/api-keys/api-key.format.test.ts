import { generateKey, hashKey, keyMatches, parseKey } from '../../../src/modules/api-keys/api-key.format.js';

describe('API key format', () => {
  it('makes keys of the contract’s shape that parse back', () => {
    const { key, publicId } = generateKey();
    expect(key).toMatch(/^mg_live_[0-9A-Za-z]{12}_[0-9A-Za-z]{38}$/);
    expect(parseKey(key)).toEqual({ key, publicId });
    expect(generateKey().key).not.toBe(key);
  });

  it('refuses a key whose checksum does not match, before any lookup', () => {
    const { key } = generateKey();
    const flipped = key.slice(0, 20) + (key[20] === 'a' ? 'b' : 'a') + key.slice(21);
    expect(parseKey(flipped)).toBeNull();
    expect(parseKey(`${key}x`)).toBeNull();
    expect(parseKey(key.replace('mg_live_', 'mg_test_'))).toBeNull();
    expect(parseKey('')).toBeNull();
  });

  it('hashes with the pepper and compares in constant time', () => {
    const { key } = generateKey();
    const hash = hashKey(key, 'pepper-one-0123456789abcdef0123456789');
    expect(keyMatches(key, hash, 'pepper-one-0123456789abcdef0123456789')).toBe(true);
    expect(keyMatches(key, hash, 'pepper-two-0123456789abcdef0123456789')).toBe(false);
    expect(keyMatches(generateKey().key, hash, 'pepper-one-0123456789abcdef0123456789')).toBe(false);
  });
});
