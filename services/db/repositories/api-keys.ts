import type { Queryable } from './queryable.js';

export interface ApiKeyRow {
  tenant_id: string;
  key_id: string;
  name: string;
  secret_sha256: Buffer;
  act_for_users: boolean;
  /** The prefix of the user ids the key may act for (migration 022); null: it acts for no user. */
  user_namespace: string | null;
  databases: string[] | null;
  routes: string[] | null;
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = 'tenant_id, key_id, name, secret_sha256, act_for_users, user_namespace, databases, routes, created_at, revoked_at';

export async function insertApiKey(db: Queryable, key: ApiKeyRow): Promise<void> {
  await db.query(`INSERT INTO api_keys (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, [
    key.tenant_id,
    key.key_id,
    key.name,
    key.secret_sha256,
    key.act_for_users,
    key.user_namespace,
    key.databases,
    key.routes,
    key.created_at,
    key.revoked_at,
  ]);
}

/** A tenant's keys, revoked ones included, newest first. */
export async function listApiKeys(db: Queryable, tenantId: string): Promise<ApiKeyRow[]> {
  const { rows } = await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = $1 ORDER BY created_at DESC, key_id DESC`, [
    tenantId,
  ]);
  return rows;
}

export async function findApiKey(db: Queryable, tenantId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  const { rows } = await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = $1 AND key_id = $2`, [tenantId, keyId]);
  return rows[0];
}

/** Marks a key revoked (kept for the audit's sake); false when the tenant has no such key. A second revoke keeps the first time. */
export async function revokeApiKey(db: Queryable, tenantId: string, keyId: string, at: Date): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3) WHERE tenant_id = $1 AND key_id = $2', [
    tenantId,
    keyId,
    at,
  ]);
  return (rowCount ?? 0) > 0;
}
