import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { recordCallForUser, verifyApiKey } from '../../core/api-keys/api-keys.js';
import { isReservedUserId, keyActedUserId, keyPrincipal } from '../../core/api-keys/user-namespace.js';
import type { ApiKeyRow } from '../../db/repositories/api-keys.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';

export const API_KEY_HEADER = 'x-api-key';
export const ON_BEHALF_HEADER = 'x-memory-user';

/** Whether the request authenticates with an API key rather than a JWT. */
export function presentsApiKey(request: FastifyRequest): boolean {
  return request.headers[API_KEY_HEADER] !== undefined;
}

/** The API key a request presented, once verified, and whether it acts for an end user (`X-Memory-User`). */
export interface PresentedApiKey {
  row: ApiKeyRow;
  actsForUser: boolean;
}

/**
 * The identity of a request that presents `X-Api-Key` (docs/api-keys.md). With `X-Memory-User` (and
 * the key's act_for_users permission) it is that end user's identity, made by `userIdentity`, the
 * same function that makes a JWT's, so the user id passes the same rules; the id must lie in the
 * key's user namespace and is stored as `key-user:<id>`, apart from every JWT subject
 * (core/api-keys/user-namespace.ts). The call is in the access audit with the key's id. Without the
 * header the key acts as its own principal. A key never carries roles: admin routes need a JWT.
 * A route marked `operationsInBody` (the MCP endpoint) runs several operations per request: it checks
 * each with `authorizeKeyOperation` instead.
 */
export async function identityOfApiKey(
  request: FastifyRequest,
  db: ScopedDatabase,
  userIdentity: (userId: string, tenantId: string) => Identity,
): Promise<Identity> {
  const presented = request.headers[API_KEY_HEADER];
  if (typeof presented !== 'string') throw new AppError('unauthorized', 'send one X-Api-Key header');
  // Two credentials could name two identities; neither is chosen silently.
  if (request.headers.authorization !== undefined) throw new AppError('unauthorized', 'send either a JWT or an API key, not both');
  const key = await verifyApiKey(db, presented);
  const operation = request.routeOptions.config?.operationsInBody
    ? undefined
    : (request.routeOptions.schema?.operationId ?? request.routeOptions.url ?? '');
  if (operation !== undefined) assertKeyMayCall(key, operation);
  const bounds = { roles: [], apiKeyId: key.key_id, ...(key.databases ? { databases: key.databases } : {}) };

  const onBehalf = request.headers[ON_BEHALF_HEADER];
  const identity =
    onBehalf === undefined
      ? { tenantId: key.tenant_id, userId: keyPrincipal(key.key_id), ...bounds }
      : { ...actedForUser(key, headerText(onBehalf), userIdentity), ...bounds };
  request.apiKey = { row: key, actsForUser: onBehalf !== undefined };
  if (operation !== undefined) await auditKeyCall(db, request, identity, operation);
  return identity;
}

/**
 * One operation of a route marked `operationsInBody` (an MCP tool), checked as a route of that
 * operationId is: a key limited to other routes is refused (403), and a call for a user is in the
 * access audit, before the operation runs. A JWT's request passes: its roles are the route's concern.
 */
export async function authorizeKeyOperation(request: FastifyRequest, db: ScopedDatabase, operation: string): Promise<void> {
  if (!request.apiKey) return;
  assertKeyMayCall(request.apiKey.row, operation);
  await auditKeyCall(db, request, request.identity, operation);
}

function assertKeyMayCall(key: ApiKeyRow, operation: string): void {
  if (key.routes && !key.routes.includes(operation)) throw new AppError('forbidden', `this API key may not call ${operation}`);
}

async function auditKeyCall(db: ScopedDatabase, request: FastifyRequest, identity: Identity, operation: string): Promise<void> {
  const key = request.apiKey;
  if (!key?.actsForUser || NOT_MEMORY_ACCESS.has(operation)) return;
  await recordCallForUser(db, {
    key: key.row,
    subjectUserId: identity.userId,
    target: operation,
    at: new Date(),
    origin: { httpRequestId: request.id },
  });
}

/**
 * Calls that read no memory are not accesses to audit. The status of the user's own GDPR request is
 * what a bot polls while an erasure runs: an entry per poll would name the erased user again, after
 * the erasure pseudonymised their earlier entries (a JWT's poll writes none either).
 */
const NOT_MEMORY_ACCESS = new Set(['getGdprRequest']);

/**
 * The user a key acts for: the header's id, by the JWT subject's rules, within the key's namespace,
 * stored in the space of key-acted users. A key made before namespaces existed acts for no one.
 */
function actedForUser(key: ApiKeyRow, userId: string | undefined, userIdentity: (userId: string, tenantId: string) => Identity): Identity {
  if (!key.act_for_users) throw new AppError('forbidden', 'X-Memory-User needs an API key with the act_for_users permission');
  if (key.user_namespace === null) {
    throw new AppError('forbidden', 'this API key has no user namespace: replace it with a key that names one (docs/api-keys.md)');
  }
  const named = userIdentityOrRefusal(userId, key.tenant_id, userIdentity);
  if (isReservedUserId(named.userId) || !named.userId.startsWith(key.user_namespace)) {
    throw new AppError('forbidden', `this API key acts only for users whose ids start with "${key.user_namespace}"`);
  }
  return userIdentityOrRefusal(keyActedUserId(named.userId), key.tenant_id, userIdentity);
}

function userIdentityOrRefusal(userId: string | undefined, tenantId: string, userIdentity: (userId: string, tenantId: string) => Identity) {
  if (userId === undefined) throw new AppError('unauthorized', 'X-Memory-User must name one user in UTF-8');
  try {
    return userIdentity(userId, tenantId);
  } catch (err) {
    if (err instanceof AppError) throw new AppError('unauthorized', `X-Memory-User is not a valid user id: ${err.message}`);
    throw err;
  }
}

/** Node reads header bytes as Latin-1; clients send ids beyond ASCII as UTF-8 bytes. */
function headerText(value: string | string[]): string | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(value, 'latin1'));
  } catch {
    return undefined;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every operationId of the service: what a key's `routes` may name. */
    operationIds: ReadonlySet<string>;
  }
  interface FastifyRequest {
    /** The API key the request presented, once verified (identityOfApiKey); null with a JWT. */
    apiKey: PresentedApiKey | null;
  }
  interface FastifyContextConfig {
    /** The route runs operations its body names (the MCP endpoint's tools), each checked with authorizeKeyOperation. */
    operationsInBody?: boolean;
  }
}

/**
 * Register before the routes. Documents the key as a second way in on every route a user calls with
 * a JWT (the admin routes need the `memory-admin` role, which no key carries, so they keep the JWT
 * alone), and collects the operationIds a key may be limited to.
 */
export default fp(
  async function apiKeys(app: FastifyInstance) {
    const operationIds = new Set<string>();
    app.decorate('operationIds', operationIds);
    app.decorateRequest('apiKey', null);
    app.addHook('onRoute', (route) => {
      const schema = route.schema as { operationId?: string; security?: Record<string, string[]>[]; tags?: string[] } | undefined;
      if (schema?.operationId) operationIds.add(schema.operationId);
      const security = schema?.security;
      if (!security?.some((s) => 'bearerAuth' in s) || schema?.tags?.includes('admin')) return;
      // A GET route's HEAD twin shares its schema: the second onRoute finds the key already there.
      if (!security.some((s) => 'apiKeyAuth' in s)) schema!.security = [...security, { apiKeyAuth: [] }];
    });
  },
  { name: 'api-keys' },
);
