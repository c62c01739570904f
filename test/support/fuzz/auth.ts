import { createSigner } from 'fast-jwt';
import { TEST_JWT_SECRET } from '../service/test-app.js';

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * Authorization header values that must all answer 401 (never 5xx) on every protected route: no
 * scheme, another scheme, garbage, and tokens that are unsigned, expired, not yet valid, signed with
 * another key, tampered with, oversized, or without a usable user claim.
 */
export function brokenAuthorizations(validToken: string): string[] {
  const sign = (payload: Record<string, unknown>, options: Record<string, unknown> = {}) =>
    createSigner({ key: TEST_JWT_SECRET, algorithm: 'HS256', ...options })(payload);
  const [header, payload, signature] = validToken.split('.');
  const now = Math.floor(Date.now() / 1000);
  return [
    'Bearer',
    'Bearer ',
    'bearer x',
    'Basic dXNlcjpwYXNz',
    `Token ${validToken}`,
    `Bearer ${validToken}.extra`,
    `Bearer ${validToken} ${validToken}`,
    'Bearer a.b.c',
    'Bearer ...',
    `Bearer ${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ sub: 'mallory' })}.`,
    `Bearer ${base64url({ alg: 'HS256' })}.${base64url({ sub: 'mallory' })}.${signature}`,
    `Bearer ${header}.${base64url({ sub: 'mallory', iat: now })}.${signature}`,
    `Bearer ${header}.${payload}.${signature?.slice(0, -2)}AA`,
    `Bearer ${sign({ sub: 'fuzz-u0', exp: now - 60 })}`,
    `Bearer ${sign({ sub: 'fuzz-u0', nbf: now + 3600 })}`,
    `Bearer ${sign({ tenant: 'acme' })}`,
    `Bearer ${sign({ sub: '' })}`,
    `Bearer ${sign({ sub: { id: 'x' } })}`,
    `Bearer ${sign({ sub: 'nul\u0000user' })}`,
    `Bearer ${createSigner({ key: 'another-secret-that-is-32-characters-long!', algorithm: 'HS256' })({ sub: 'fuzz-u0' })}`,
    `Bearer ${sign({ sub: 'fuzz-u0', pad: 'x'.repeat(9000) })}`,
    `Bearer ${'A'.repeat(20_000)}`,
    `Bearer ${"'; DROP TABLE turns; --"}`,
  ];
}
