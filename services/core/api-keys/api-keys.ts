import { randomUUID } from 'node:crypto';
import { type ApiKeyRow, findApiKey, insertApiKey, listApiKeys, revokeApiKey } from '../../db/repositories/api-keys.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import { type AccessOrigin, recordAccess } from '../audit/access-audit.js';
import { formatApiKey, hashSecret, newSecret, parseApiKey, secretMatches } from './api-key-secret.js';
import { keyPrincipal, userNamespaceOfNewKey } from './user-namespace.js';

export interface NewApiKey {
  name: string;
  act_for_users: boolean;
  user_namespace?: string;
  databases?: string[];
  routes?: string[];
}

/** What the admin routes show of a key: never its secret or hash. */
export function apiKeyView(key: ApiKeyRow) {
  return {
    key_id: key.key_id,
    name: key.name,
    act_for_users: key.act_for_users,
    user_namespace: key.user_namespace,
    databases: key.databases,
    routes: key.routes,
    created_at: key.created_at.toISOString(),
    revoked_at: key.revoked_at?.toISOString() ?? null,
  };
}

const asAdmin = (db: ScopedDatabase, admin: Identity) => db.asUser({ ...admin, tenantAdmin: true });

/** POST /admin/api-keys: the key of the admin's tenant, with its secret, which is shown this once. */
export async function createTenantApiKey(db: ScopedDatabase, admin: Identity, input: NewApiKey, now: Date) {
  const secret = newSecret();
  const row: ApiKeyRow = {
    tenant_id: admin.tenantId,
    key_id: randomUUID(),
    name: input.name,
    secret_sha256: hashSecret(secret),
    act_for_users: input.act_for_users,
    user_namespace: userNamespaceOfNewKey(input.act_for_users, input.user_namespace),
    databases: input.databases ?? null,
    routes: input.routes ?? null,
    created_at: now,
    revoked_at: null,
  };
  await insertApiKey(asAdmin(db, admin), row);
  return { ...apiKeyView(row), api_key: formatApiKey({ tenantId: row.tenant_id, keyId: row.key_id, secret }) };
}

export async function listTenantApiKeys(db: ScopedDatabase, admin: Identity) {
  return { api_keys: (await listApiKeys(asAdmin(db, admin), admin.tenantId)).map(apiKeyView) };
}

export async function revokeTenantApiKey(db: ScopedDatabase, admin: Identity, keyId: string, now: Date) {
  const scope = asAdmin(db, admin);
  if (!(await revokeApiKey(scope, admin.tenantId, keyId, now))) throw new AppError('not-found', 'this tenant has no such API key');
  return apiKeyView((await findApiKey(scope, admin.tenantId, keyId))!);
}

/**
 * The live key a request presents, or 401. Every failure reads the same, so a caller learns nothing
 * about which tenants or key ids exist. Looked up as the key's own principal, which row-level
 * security lets read that one row only.
 */
export async function verifyApiKey(db: ScopedDatabase, presented: string): Promise<ApiKeyRow> {
  const parsed = parseApiKey(presented);
  const key =
    parsed &&
    (await findApiKey(db.asUser({ tenantId: parsed.tenantId, userId: keyPrincipal(parsed.keyId) }), parsed.tenantId, parsed.keyId));
  if (!parsed || !key || !secretMatches(parsed.secret, key.secret_sha256)) {
    throw new AppError('unauthorized', 'the API key is not valid');
  }
  if (key.revoked_at) throw new AppError('unauthorized', 'the API key has been revoked');
  return key;
}

/** Records a call a key made for an end user (docs/privacy.md#access-audit), before the call runs. */
export function recordCallForUser(
  db: ScopedDatabase,
  call: { key: ApiKeyRow; subjectUserId: string; target: string; at: Date; origin: AccessOrigin },
): Promise<void> {
  const actor: Identity = { tenantId: call.key.tenant_id, userId: keyPrincipal(call.key.key_id), roles: [] };
  return recordAccess(db.asUser(actor), {
    actor,
    subjectUserId: call.subjectUserId,
    action: 'act_for_user',
    target: call.target,
    at: call.at,
    origin: call.origin,
    apiKeyId: call.key.key_id,
  });
}
