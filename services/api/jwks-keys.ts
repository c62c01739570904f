import { createPublicKey, type JsonWebKey } from 'node:crypto';

export interface JwksKeysOptions {
  url: string;
  /** How long a fetched key set is trusted. A key removed from the JWKS is refused after at most this long. */
  ttlMs: number;
  fetchTimeoutMs?: number;
  clock?: () => number;
}

/** A token whose key cannot be found or read: the caller answers 401, never 500. */
export class JwksKeyError extends Error {
  override name = 'JwksKeyError';
}

interface KeySet {
  keys: Map<string, { pem: string; alg?: string }>;
  fetchedAt: number;
}

// A token naming an unknown kid refreshes the key set at once (a newly rotated key works immediately),
// but tokens with made-up kids must not turn into one JWKS request each.
const UNKNOWN_KID_COOLDOWN_MS = 10_000;
// After a failed refresh, wait this long before asking the JWKS again.
const FAILURE_BACKOFF_MS = 2_000;

/**
 * Public keys by kid from a JWKS URL, in PEM. The key set is re-read after `ttlMs`, or when a token
 * names a kid it does not hold. When the JWKS cannot be read (network error, non-2xx, not JSON), the
 * last key set stays usable for one more `ttlMs`, so a short identity-provider outage does not lock
 * everyone out; when it answers, its answer is final, and a removed key is gone.
 *
 * get-jwks was used before: when a refresh fails it serves the expired key from a stale cache, also when
 * the JWKS answered without that kid, and each such answer renews the stale entry, so a removed key
 * stayed valid for as long as tokens kept using it.
 */
export function createJwksKeys({ url, ttlMs, fetchTimeoutMs = 5_000, clock = Date.now }: JwksKeysOptions) {
  let current: KeySet | undefined;
  let inflight: Promise<KeySet> | undefined;
  let lastFailureAt = -Infinity;
  let lastUnknownKidAt = -Infinity;

  function refresh(): Promise<KeySet> {
    inflight ??= fetchKeySet(url, fetchTimeoutMs, clock)
      .then(
        (set) => (current = set),
        (err: unknown) => {
          lastFailureAt = clock();
          throw err;
        },
      )
      .finally(() => (inflight = undefined));
    return inflight;
  }

  function lastKnown(now: number, cause?: unknown): KeySet {
    if (current && now - current.fetchedAt < 2 * ttlMs) return current;
    throw new JwksKeyError('the JWKS could not be read', { cause });
  }

  async function keySetFor(kid: string): Promise<KeySet> {
    const now = clock();
    const fresh = current !== undefined && now - current.fetchedAt < ttlMs;
    const unknownKidMayRefresh = now - lastUnknownKidAt >= UNKNOWN_KID_COOLDOWN_MS;
    if (fresh && (current!.keys.has(kid) || !unknownKidMayRefresh)) return current!;
    if (now - lastFailureAt < FAILURE_BACKOFF_MS) return lastKnown(now);
    try {
      const set = await refresh();
      if (!set.keys.has(kid)) lastUnknownKidAt = clock();
      return set;
    } catch (err) {
      return lastKnown(now, err);
    }
  }

  return async function publicKey(kid: string | undefined, alg: string | undefined): Promise<string> {
    if (!kid) throw new JwksKeyError('the token names no key (kid)');
    const key = (await keySetFor(kid)).keys.get(kid);
    if (!key) throw new JwksKeyError(`the JWKS has no key "${kid}"`);
    if (key.alg && alg !== key.alg) throw new JwksKeyError(`key "${kid}" is for ${key.alg}, not ${alg}`);
    return key.pem;
  };
}

async function fetchKeySet(url: string, timeoutMs: number, clock: () => number): Promise<KeySet> {
  const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`the JWKS answered ${response.status}`);
  const body = (await response.json()) as { keys?: unknown };
  if (!Array.isArray(body?.keys)) throw new Error('the JWKS has no "keys" array');
  const keys: KeySet['keys'] = new Map();
  for (const jwk of body.keys as Array<JsonWebKey & { kid?: unknown; use?: unknown; alg?: unknown }>) {
    // Only signing keys of the asymmetric families auth accepts; a symmetric ("oct") key is never a public key.
    if (typeof jwk?.kid !== 'string' || (jwk.kty !== 'RSA' && jwk.kty !== 'EC')) continue;
    if (jwk.use !== undefined && jwk.use !== 'sig') continue;
    try {
      const pem = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString();
      keys.set(jwk.kid, { pem, ...(typeof jwk.alg === 'string' ? { alg: jwk.alg } : {}) });
    } catch {
      // A malformed key is skipped; tokens naming it are refused as naming an unknown key.
    }
  }
  return { keys, fetchedAt: clock() };
}
