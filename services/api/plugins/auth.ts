import { createPublicKey } from 'node:crypto';
import fastifyJwt, { type FastifyJWTOptions } from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import { isReservedUserId } from '../../core/api-keys/user-namespace.js';
import { storableTextProblem } from '../../core/stored-bounds.js';
import { traced } from '../../core/tracing.js';
import { AppError } from '../../model/errors.js';
import { type Identity, normaliseIdentifier, userPseudonym } from '../../model/identity.js';
import { createJwksKeys } from '../jwks-keys.js';
import { identityOfApiKey, presentsApiKey } from './api-keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    identity: Identity;
  }
  interface FastifyContextConfig {
    /** Reachable without a token (health, metrics, docs, the spec). */
    public?: boolean;
  }
}

export interface AuthOptions {
  config: Config;
  /** The HS256 secret in local mode (kept under DATA_DIR by the server entry point). */
  localSecret?: string;
}

const MAX_TOKEN_BYTES = 8192;
const HMAC = ['HS256', 'HS384', 'HS512'] as const;
const RSA = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] as const;
const EC = ['ES256', 'ES384', 'ES512'] as const;

/**
 * Verifies `Authorization: Bearer <JWT>` (or an `X-Api-Key`: plugins/api-keys.ts) on every route not
 * marked public and sets `request.identity` from its claims. Only the configured key family's algorithms are accepted.
 */
export default fp(
  async function auth(app: FastifyInstance, { config, localSecret }: AuthOptions) {
    await app.register(fastifyJwt, jwtOptions(config, localSecret));
    app.decorateRequest('identity', null as unknown as Identity);

    app.addHook('onRequest', async (request, reply) => {
      if (isPublicRoute(request)) return;
      // An address that failed too often is refused before its credential is checked (plugins/rate-limit.ts).
      await app.authFailures?.refuseIfThrottled(request, reply);
      try {
        // An API key (docs/api-keys.md) names its end user in a header; that id passes the JWT subject's rules.
        request.identity = presentsApiKey(request)
          ? await identityOfApiKey(request, app.db, (userId, tenantId) =>
              identityFrom({ [config.JWT_USER_CLAIM]: userId, [config.JWT_TENANT_CLAIM]: tenantId }, config),
            )
          : await identityOfJwt(request, config);
      } catch (err) {
        if (err instanceof AppError && err.status === 401) await app.authFailures?.recordFailure(request);
        throw err;
      }
      // Logs name the tenant and a stable pseudonym of the user, never the user id itself.
      request.log = request.log.child({ tenant: request.identity.tenantId, user: userPseudonym(request.identity) });
      reply.log = request.log; // "request completed" is logged through the reply's logger
    });
  },
  { name: 'auth' },
);

async function identityOfJwt(request: FastifyRequest, config: Config): Promise<Identity> {
  const header = request.headers.authorization;
  if (!header || !/^Bearer\s+\S+$/i.test(header)) {
    throw new AppError('unauthorized', 'send a JWT as "Authorization: Bearer <token>"');
  }
  if (header.length > MAX_TOKEN_BYTES) throw new AppError('unauthorized', 'the token is too large');
  let claims: Record<string, unknown>;
  try {
    claims = await traced('auth', {}, () => request.jwtVerify<Record<string, unknown>>());
  } catch (err) {
    throw new AppError('unauthorized', describeJwtError(err), { cause: err });
  }
  assertIssuedInThePast(claims);
  const identity = identityFrom(claims, config);
  // Those ids are the service's own: a key's principal and the users keys act for (docs/api-keys.md).
  if (isReservedUserId(identity.userId)) {
    throw new AppError('unauthorized', `the token's "${config.JWT_USER_CLAIM}" claim names an id reserved for API keys`);
  }
  return identity;
}

/**
 * How far a token's `iat` may be ahead of this server's clock: the skew between two machines' clocks,
 * no more. The verifier checks `exp`, `nbf` and JWT_MAX_AGE, not an `iat` in the future; such a token
 * (a year ahead, say) would outlive JWT_MAX_AGE by as much, so it is refused.
 */
const IAT_CLOCK_SKEW_S = 60;

function assertIssuedInThePast(claims: Record<string, unknown>): void {
  if (typeof claims.iat === 'number' && claims.iat > Date.now() / 1000 + IAT_CLOCK_SKEW_S) {
    throw new AppError('unauthorized', `the token's iat is in the future (more than ${IAT_CLOCK_SKEW_S} s ahead of this server's clock)`);
  }
}

/** Routes marked `config.public` (health, metrics, docs, the spec); no route: the not-found handler answers. */
export function isPublicRoute(request: FastifyRequest): boolean {
  return !request.routeOptions.url || request.routeOptions.config?.public === true;
}

function jwtOptions(config: Config, localSecret?: string): FastifyJWTOptions {
  // A token without `exp` would be valid forever; in production such a token is refused. A configured
  // issuer or audience is required, not only checked when present: a token minted for another
  // service of the same key, without those claims, must not pass.
  const requiredClaims = [
    ...(config.isProduction ? ['exp'] : []),
    ...(config.jwtMaxAgeMs ? ['iat'] : []),
    ...(config.JWT_ISSUER ? ['iss'] : []),
    ...(config.JWT_AUDIENCE ? ['aud'] : []),
  ];
  const verify = {
    ...(config.JWT_ISSUER ? { allowedIss: config.JWT_ISSUER } : {}),
    ...(config.JWT_AUDIENCE ? { allowedAud: config.JWT_AUDIENCE } : {}),
    // @fastify/jwt reads a numeric maxAge as seconds.
    ...(config.jwtMaxAgeMs ? { maxAge: config.jwtMaxAgeMs / 1000 } : {}),
    ...(requiredClaims.length ? { requiredClaims } : {}),
  };
  if (config.JWT_PUBLIC_KEY) {
    const type = createPublicKey(config.JWT_PUBLIC_KEY).asymmetricKeyType;
    const algorithms = type === 'ec' ? [...EC] : type === 'rsa' || type === 'rsa-pss' ? [...RSA] : undefined;
    if (!algorithms) throw new Error(`JWT_PUBLIC_KEY: unsupported key type ${type} (use an RSA or EC key)`);
    return { secret: { public: config.JWT_PUBLIC_KEY }, verify: { ...verify, ...VERIFIED_TOKEN_CACHE, algorithms } };
  }
  if (config.JWT_JWKS_URL) {
    const publicKey = createJwksKeys({ url: config.JWT_JWKS_URL, ttlMs: config.jwksCacheTtlMs });
    return {
      decode: { complete: true },
      secret: async (_request: FastifyRequest, token: unknown) => {
        const { header } = token as { header: { kid?: string; alg?: string } };
        return publicKey(header.kid, header.alg);
      },
      verify: { ...verify, algorithms: [...RSA, ...EC] },
    } as FastifyJWTOptions;
  }
  const secret = config.JWT_SECRET ?? localSecret;
  if (!secret) throw new Error('no JWT verification key: set JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL');
  return { secret, verify: { ...verify, ...VERIFIED_TOKEN_CACHE, algorithms: [...HMAC] } };
}

/**
 * A client sends the same token on every request until it expires: fast-jwt keeps the claims it
 * verified, by the token's digest, for at most a minute and never past the token's exp, nbf window
 * or maxAge, and a repeat skips decoding, the signature and the claim checks. For a fixed key only:
 * with JWKS @fastify/jwt builds a verifier per request, whose cache would never be hit. Refusals are
 * not kept.
 */
const VERIFIED_TOKEN_CACHE = { cache: 1000, cacheTTL: 60_000 } as const;

/**
 * Claims name the tenant and the user exactly or the token is refused: a claim of the wrong type that
 * fell back to a default would merge tenants (`tenant: 101` and `tenant: 202` both becoming `default`).
 * An absent tenant claim is the `default` tenant (docs/design.md §3). The user claim may be an integer
 * (chat platforms number their users); it is stored as its decimal text.
 */
function identityFrom(claims: Record<string, unknown>, config: Config): Identity {
  const user = claims[config.JWT_USER_CLAIM];
  const userClaim = typeof user === 'number' && Number.isSafeInteger(user) ? String(user) : user;
  if (!isNonBlankString(userClaim)) {
    throw new AppError(
      'unauthorized',
      `the token's "${config.JWT_USER_CLAIM}" claim must name the user as a non-blank string or an integer`,
    );
  }
  const tenantClaim = claims[config.JWT_TENANT_CLAIM];
  if (tenantClaim !== undefined && !isNonBlankString(tenantClaim)) {
    throw new AppError('unauthorized', `the token's "${config.JWT_TENANT_CLAIM}" claim must name the tenant as a non-blank string`);
  }
  const userId = identifier(userClaim, config.JWT_USER_CLAIM);
  const tenantId = tenantClaim === undefined ? 'default' : identifier(tenantClaim, config.JWT_TENANT_CLAIM);
  const databases = config.JWT_DATABASES_CLAIM ? databasesFrom(claims[config.JWT_DATABASES_CLAIM], config.JWT_DATABASES_CLAIM) : undefined;
  // Such a name could not be stored or set as a row-security scope, and broken Unicode would merge databases.
  const problem = (databases ?? []).map(storableTextProblem).find(Boolean);
  if (problem) throw new AppError('unauthorized', `the token's "${config.JWT_DATABASES_CLAIM}" claim ${problem}`);
  return {
    userId,
    tenantId,
    roles: stringList(claims[config.JWT_ROLES_CLAIM], ' ') ?? [],
    ...(databases ? { databases } : {}),
  };
}

/** The user or tenant id by the one identity rule (normaliseIdentifier), which the admin routes apply too. */
function identifier(value: string, claim: string): string {
  const rule = normaliseIdentifier(value);
  if ('problem' in rule) throw new AppError('unauthorized', `the token's "${claim}" claim ${rule.problem}`);
  return rule.id;
}

function isNonBlankString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/** The databases a token allows bound what memory may use, so a claim that cannot be read bounds nothing: refused. */
function databasesFrom(value: unknown, claim: string): string[] | undefined {
  if (value === undefined) return undefined;
  const list = Array.isArray(value) ? value : typeof value === 'string' ? splitClaim(value, ',') : undefined;
  if (!list?.every(isNonBlankString)) {
    throw new AppError(
      'unauthorized',
      `the token's "${claim}" claim must list databases as strings (an array, or one comma-separated string)`,
    );
  }
  return list;
}

/** Roles only widen access, so entries that are not strings are ignored rather than refused. */
function stringList(value: unknown, separator: string): string[] | undefined {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  if (typeof value === 'string') return splitClaim(value, separator);
  return undefined;
}

/** A claim that lists its entries in one string: `"sales, hr"`, `"admin reader"`. */
function splitClaim(value: string, separator: string): string[] {
  return value
    .split(separator)
    .map((v) => v.trim())
    .filter(Boolean);
}

function describeJwtError(err: unknown): string {
  const { code, message = '' } = err as { code?: string; message?: string };
  if (code === 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED') return 'the token has expired';
  // fast-jwt's reasons name the failed check ("The token will be active at …"), never key material.
  const reason = message.replace(/^Authorization token is invalid:\s*/, '').trim();
  return reason ? `the token is invalid: ${reason}` : 'the token could not be verified';
}
