import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseSealingKeys } from '../../../services/config/account-link-keys.js';
import { seal, sealedKeyId, UnsealError, unseal } from '../../../services/core/linking/token-sealing.js';

const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

describe('sealing linked accounts’ tokens (AES-256-GCM, key ids, rotation)', () => {
  const [old, current] = [key('2026-01'), key('2026-06')];
  const tokens = { access_token: 'eyJhbGciOiJSUzI1NiJ9.access', refresh_token: 'refresh-8f2c' };

  it('when a value is sealed, then its bytes hold neither token and it opens again only for its own context', () => {
    const keys = parseSealingKeys(old);
    const sealed = seal(keys, tokens, 'linked-tokens\0acme\0slack:T1:UA');
    expect(sealed.toString('latin1')).not.toContain('eyJhbGciOiJSUzI1NiJ9');
    expect(sealed.toString('latin1')).not.toContain('refresh-8f2c');
    expect(unseal(keys, sealed, 'linked-tokens\0acme\0slack:T1:UA')).toEqual(tokens);
    // Copied to another user's row, it does not open.
    expect(() => unseal(keys, sealed, 'linked-tokens\0acme\0slack:T1:UB')).toThrow(UnsealError);
  });

  it('when a new key goes first and the old one stays listed, then new values use the new key and old ones still open', () => {
    const before = seal(parseSealingKeys(old), tokens, 'ctx');
    const rotated = parseSealingKeys(`${current},${old}`);
    const after = seal(rotated, tokens, 'ctx');
    expect([sealedKeyId(before), sealedKeyId(after)]).toEqual(['2026-01', '2026-06']);
    expect(unseal(rotated, before, 'ctx')).toEqual(tokens);
    expect(unseal(rotated, after, 'ctx')).toEqual(tokens);
    // Once the old key is removed, what it sealed no longer opens: the user signs in again.
    expect(() => unseal(parseSealingKeys(current), before, 'ctx')).toThrow(/key "2026-01", which is not among the configured keys/);
  });

  it('when a sealed value is altered by one bit, then it does not open', () => {
    const keys = parseSealingKeys(current);
    const sealed = seal(keys, tokens, 'ctx');
    sealed[sealed.length - 1]! ^= 1;
    expect(() => unseal(keys, sealed, 'ctx')).toThrow(UnsealError);
  });

  it.each([
    ['', /lists no key/],
    ['k1:c2hvcnQ=', /must be 32 bytes/],
    ['no-colon', /each key is "id:base64"/],
    [`${key('a')},${key('a')}`, /listed twice/],
  ])('when the keys read %j, then they are refused: %s', (text, message) => {
    expect(() => parseSealingKeys(text)).toThrow(message);
  });
});
