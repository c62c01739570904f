import { inUserBatches } from './per-user-batches.js';
import type { Queryable } from './queryable.js';

/*
 * Linked accounts (migration 021, docs/account-linking.md): one row per user, with the sign-in in
 * progress and the linked account's sealed tokens. Every statement names the user in its WHERE clause
 * and runs in that user's scope (row-level security), but the retention deletes, which run as
 * maintenance across users.
 */

export interface LinkedIdentityRow {
  tenant_id: string;
  user_id: string;
  issuer: string | null;
  subject: string | null;
  username: string | null;
  key_id: string | null;
  sealed_tokens: Buffer | null;
  access_expires_at: Date | null;
  refresh_expires_at: Date | null;
  token_version: string;
  refresh_lease_until: Date | null;
  linked_at: Date | null;
  refreshed_at: Date | null;
  expired_at: Date | null;
}

const COLUMNS = `tenant_id, user_id, issuer, subject, username, key_id, sealed_tokens, access_expires_at, refresh_expires_at,
  token_version, refresh_lease_until, linked_at, refreshed_at, expired_at`;

/** A sign-in begins: it replaces any other in progress (one link is valid at a time); a linked account stays until it completes. */
export async function beginPendingLink(
  db: Queryable,
  link: { tenantId: string; userId: string; linkId: string; sealed: Buffer; expiresAt: Date; now: Date },
): Promise<void> {
  await db.query(
    `INSERT INTO linked_identities (tenant_id, user_id, pending_link_id, pending_sealed, pending_expires_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, user_id) DO UPDATE
       SET pending_link_id = excluded.pending_link_id, pending_sealed = excluded.pending_sealed,
           pending_expires_at = excluded.pending_expires_at`,
    [link.tenantId, link.userId, link.linkId, link.sealed, link.expiresAt, link.now],
  );
}

/**
 * Takes the sign-in `linkId` if it is the user's current one and still valid: it can complete once.
 * Its sealed PKCE verifier, or undefined (unknown, replaced, expired, already used, unlinked or erased).
 */
export async function takePendingLink(
  db: Queryable,
  tenantId: string,
  userId: string,
  linkId: string,
  now: Date,
): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ sealed: Buffer }>(
    `UPDATE linked_identities l SET pending_link_id = NULL, pending_sealed = NULL, pending_expires_at = NULL
     FROM (SELECT pending_sealed FROM linked_identities
           WHERE tenant_id = $1 AND user_id = $2 AND pending_link_id = $3 AND pending_expires_at > $4 FOR UPDATE) p
     WHERE l.tenant_id = $1 AND l.user_id = $2
     RETURNING p.pending_sealed AS sealed`,
    [tenantId, userId, linkId, now],
  );
  return rows[0]?.sealed;
}

export async function findLinkedIdentity(db: Queryable, tenantId: string, userId: string): Promise<LinkedIdentityRow | undefined> {
  const { rows } = await db.query<LinkedIdentityRow>(`SELECT ${COLUMNS} FROM linked_identities WHERE tenant_id = $1 AND user_id = $2`, [
    tenantId,
    userId,
  ]);
  return rows[0];
}

export interface SealedTokens {
  issuer: string;
  subject: string;
  username: string | null;
  keyId: string;
  sealed: Buffer;
  accessExpiresAt: Date | null;
  refreshExpiresAt: Date | null;
}

/**
 * A completed sign-in's tokens, over whatever the row held. Only onto an existing row: one that was
 * deleted meanwhile (unlinked, erased) is not brought back. The tokens it replaced, for revocation.
 */
export async function storeLinkedAccount(
  db: Queryable,
  tenantId: string,
  userId: string,
  tokens: SealedTokens,
  now: Date,
): Promise<{ stored: boolean; replaced: { keyId: string; sealed: Buffer } | null }> {
  const { rows } = await db.query<{ key_id: string | null; sealed: Buffer | null }>(
    `UPDATE linked_identities l
     SET issuer = $3, subject = $4, username = $5, key_id = $6, sealed_tokens = $7, access_expires_at = $8,
         refresh_expires_at = $9, token_version = l.token_version + 1, refresh_lease_until = NULL,
         linked_at = $10, refreshed_at = $10, expired_at = NULL
     FROM (SELECT key_id, sealed_tokens FROM linked_identities WHERE tenant_id = $1 AND user_id = $2 FOR UPDATE) o
     WHERE l.tenant_id = $1 AND l.user_id = $2
     RETURNING o.key_id, o.sealed_tokens AS sealed`,
    [
      tenantId,
      userId,
      tokens.issuer,
      tokens.subject,
      tokens.username,
      tokens.keyId,
      tokens.sealed,
      tokens.accessExpiresAt,
      tokens.refreshExpiresAt,
      now,
    ],
  );
  const row = rows[0];
  return { stored: !!row, replaced: row?.key_id && row.sealed ? { keyId: row.key_id, sealed: row.sealed } : null };
}

/** Claims the refresh of the tokens at `version` until `until`: false when another process holds it, or the tokens moved on. */
export async function claimRefresh(
  db: Queryable,
  tenantId: string,
  userId: string,
  version: string,
  now: Date,
  until: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE linked_identities SET refresh_lease_until = $5
     WHERE tenant_id = $1 AND user_id = $2 AND token_version = $3 AND sealed_tokens IS NOT NULL
       AND (refresh_lease_until IS NULL OR refresh_lease_until <= $4)`,
    [tenantId, userId, version, now, until],
  );
  return (rowCount ?? 0) > 0;
}

/** Gives up the refresh of `version` (the provider failed): the next request may try again at once. */
export async function releaseRefresh(db: Queryable, tenantId: string, userId: string, version: string): Promise<void> {
  await db.query('UPDATE linked_identities SET refresh_lease_until = NULL WHERE tenant_id = $1 AND user_id = $2 AND token_version = $3', [
    tenantId,
    userId,
    version,
  ]);
}

/** Refreshed tokens, over the version the refresh started from; false when the row moved on or is gone. */
export async function storeRefreshedTokens(
  db: Queryable,
  tenantId: string,
  userId: string,
  version: string,
  tokens: Pick<SealedTokens, 'keyId' | 'sealed' | 'accessExpiresAt' | 'refreshExpiresAt'>,
  now: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE linked_identities
     SET key_id = $4, sealed_tokens = $5, access_expires_at = $6, refresh_expires_at = coalesce($7, refresh_expires_at),
         token_version = token_version + 1, refresh_lease_until = NULL, refreshed_at = $8
     WHERE tenant_id = $1 AND user_id = $2 AND token_version = $3`,
    [tenantId, userId, version, tokens.keyId, tokens.sealed, tokens.accessExpiresAt, tokens.refreshExpiresAt, now],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * The provider or the answerer refused the tokens at `version`: they are deleted, and the row says
 * the user must sign in again. False when the tokens had moved on meanwhile (another refresh).
 */
export async function expireLinkedTokens(db: Queryable, tenantId: string, userId: string, version: string, now: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE linked_identities
     SET key_id = NULL, sealed_tokens = NULL, access_expires_at = NULL, refresh_expires_at = NULL,
         token_version = token_version + 1, refresh_lease_until = NULL, expired_at = $4
     WHERE tenant_id = $1 AND user_id = $2 AND token_version = $3`,
    [tenantId, userId, version, now],
  );
  return (rowCount ?? 0) > 0;
}

/** Unlink: the row goes, with any sign-in in progress. The tokens it held, for revocation. */
export async function deleteLinkedIdentity(
  db: Queryable,
  tenantId: string,
  userId: string,
): Promise<{ found: boolean; tokens: { keyId: string; sealed: Buffer } | null }> {
  const { rows } = await db.query<{ key_id: string | null; sealed_tokens: Buffer | null }>(
    'DELETE FROM linked_identities WHERE tenant_id = $1 AND user_id = $2 RETURNING key_id, sealed_tokens',
    [tenantId, userId],
  );
  const row = rows[0];
  return { found: !!row, tokens: row?.key_id && row.sealed_tokens ? { keyId: row.key_id, sealed: row.sealed_tokens } : null };
}

/** GDPR erasure: the user's link (one row at most; the batch shape of the other erase steps). */
export async function deleteUserLinkedIdentities(db: Queryable, tenantId: string, userId: string, _limit: number): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM linked_identities WHERE tenant_id = $1 AND user_id = $2', [tenantId, userId]);
  return rowCount ?? 0;
}

/**
 * Retention (runs as maintenance, across users): deletes up to `limit` rows that can give no token:
 * sign-ins abandoned past their expiry with no account linked, links the provider or the answerer
 * refused (their tokens are gone already), and links whose refresh token has expired with their
 * access token. One statement, `FOR UPDATE SKIP LOCKED` (cleanup.ts says why); on Citus per user.
 */
export async function deleteStaleLinkedIdentities(db: Queryable, now: Date, limit: number): Promise<number> {
  const stale = `((sealed_tokens IS NULL AND (pending_expires_at IS NULL OR pending_expires_at <= $1))
                  OR (access_expires_at <= $1 AND refresh_expires_at <= $1))`;
  return inUserBatches(
    db,
    limit,
    `SELECT DISTINCT tenant_id, user_id FROM linked_identities WHERE ${stale} LIMIT $2`,
    [now, limit],
    async (byUser, remaining) => {
      const { rowCount } = await db.query(
        `WITH d AS MATERIALIZED (
           SELECT tenant_id, user_id FROM linked_identities WHERE ${stale} ${byUser('tenant_id', 'user_id')}
           LIMIT $2 FOR UPDATE SKIP LOCKED)
         DELETE FROM linked_identities l USING d
         WHERE l.tenant_id = d.tenant_id AND l.user_id = d.user_id ${byUser('l.tenant_id', 'l.user_id')}`,
        [now, remaining],
      );
      return rowCount ?? 0;
    },
  );
}
