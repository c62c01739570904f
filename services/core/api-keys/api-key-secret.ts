import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { storableTextProblem } from '../stored-bounds.js';

/**
 * The key as a bot holds it: `mck.<tenant, base64url>.<key id>.<secret>`. The tenant is in it so the
 * lookup runs scoped to that tenant (row-level security on api_keys), and the id finds the one row.
 * base64url never contains a dot, so the parts split unambiguously.
 */
const PREFIX = 'mck';
const SECRET_BYTES = 32;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export interface PresentedKey {
  tenantId: string;
  keyId: string;
  secret: string;
}

export function newSecret(): string {
  return randomBytes(SECRET_BYTES).toString('base64url');
}

export function formatApiKey(key: PresentedKey): string {
  return [PREFIX, Buffer.from(key.tenantId, 'utf8').toString('base64url'), key.keyId, key.secret].join('.');
}

/** The parts of a presented key, or undefined when it is not one this service issues. */
export function parseApiKey(presented: string): PresentedKey | undefined {
  const [prefix, tenant, keyId, secret, ...rest] = presented.split('.');
  if (prefix !== PREFIX || rest.length || !tenant || !keyId || !secret) return undefined;
  if (!BASE64URL.test(tenant) || !UUID.test(keyId) || !BASE64URL.test(secret)) return undefined;
  const tenantId = Buffer.from(tenant, 'base64url').toString('utf8');
  // A tenant that does not survive the round trip was not written by formatApiKey (broken UTF-8); one
  // that Postgres cannot hold (NUL) names no tenant, and must not reach the database as a scope.
  if (Buffer.from(tenantId, 'utf8').toString('base64url') !== tenant || storableTextProblem(tenantId)) return undefined;
  return { tenantId, keyId, secret };
}

/**
 * sha256, not a password hash: the secret is 32 random bytes, so there is nothing to guess from the
 * hash, and a slow hash would only cost every request its time.
 */
export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

export function secretMatches(secret: string, stored: Buffer): boolean {
  const presented = hashSecret(secret);
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
