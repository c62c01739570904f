import Type, { type Static } from 'typebox';
import { ConfigError } from '../config-error.js';
import { DURATION_PATTERN, parseDurationMs } from '../duration.js';

/** Identity: how tokens are verified and which claims name the user, tenant, roles and databases. */
export const IdentitySchema = Type.Object({
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  JWT_PUBLIC_KEY: Type.Optional(Type.String({ pattern: '-----BEGIN [A-Z ]*PUBLIC KEY-----' })),
  JWT_JWKS_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  JWT_ISSUER: Type.Optional(Type.String({ minLength: 1 })),
  JWT_AUDIENCE: Type.Optional(Type.String({ minLength: 1 })),
  JWT_USER_CLAIM: Type.String({ minLength: 1, default: 'sub' }),
  JWT_TENANT_CLAIM: Type.String({ minLength: 1, default: 'tenant' }),
  JWT_ROLES_CLAIM: Type.String({ minLength: 1, default: 'roles' }),
  JWT_DATABASES_CLAIM: Type.Optional(Type.String({ minLength: 1 })),
  // How long keys read from JWT_JWKS_URL are trusted: a key removed from the JWKS is refused after at most this.
  JWT_JWKS_CACHE_TTL: Type.String({ pattern: DURATION_PATTERN, default: '10m' }),
  // Tokens issued (`iat`) longer ago than this are refused, whatever their `exp`; tokens without `iat` too.
  JWT_MAX_AGE: Type.Optional(Type.String({ pattern: DURATION_PATTERN })),
});

export type IdentityVariables = Static<typeof IdentitySchema>;

/**
 * Exactly one way to verify tokens, or none outside production: local mode, which listens on loopback
 * and serves the playground unless told otherwise.
 */
export function deriveIdentity(raw: IdentityVariables & { NODE_ENV: string; HOST?: string; PLAYGROUND?: 'on' | 'off' }) {
  const jwtSources = [raw.JWT_SECRET, raw.JWT_PUBLIC_KEY, raw.JWT_JWKS_URL].filter(Boolean).length;
  if (jwtSources > 1) {
    throw new ConfigError('JWT_SECRET, JWT_PUBLIC_KEY and JWT_JWKS_URL: set exactly one of them');
  }
  if (jwtSources === 0 && raw.NODE_ENV === 'production') {
    throw new ConfigError('JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL: one is required when NODE_ENV=production');
  }
  const localAuth = jwtSources === 0;
  return {
    localAuth,
    playground: raw.PLAYGROUND ? raw.PLAYGROUND === 'on' : localAuth,
    host: raw.HOST ?? (localAuth ? '127.0.0.1' : '0.0.0.0'),
    jwksCacheTtlMs: parseDurationMs(raw.JWT_JWKS_CACHE_TTL),
    ...(raw.JWT_MAX_AGE ? { jwtMaxAgeMs: parseDurationMs(raw.JWT_MAX_AGE) } : {}),
  };
}
