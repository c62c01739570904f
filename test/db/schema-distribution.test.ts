import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

/**
 * Tables that are no user's data, with why; every other table must be distributable.
 * On Citus these stay local to the coordinator (or become reference tables).
 */
const EXEMPT: Record<string, string> = {
  migrations: "the migrator's ledger (postgres-migrations): one row per migration file, belonging to no tenant",
  // One row per tenant, no user's (migration 023): a reference table on Citus, its key the tenant alone.
  tenant_settings: "a tenant's own settings, belonging to no user",
};

/** The column naming a row's user, where it is not `user_id`. */
const USER_COLUMN: Record<string, string> = {
  // A GDPR request belongs to the user it is about; its actor may be a tenant admin (migration 007).
  gdpr_audit: 'subject_user_id',
  // An access-audit entry belongs to the user whose memory was accessed (migration 008); on Citus it
  // is distributed by tenant, since an erase pseudonymises the subject (migration 016).
  access_audit: 'subject_user_id',
  // An API key belongs to its tenant, not to a user (migration 013): a reference table on Citus.
  api_keys: 'key_id',
  // The erasure barrier's row outlives the user's data, so it names the user by the sha256 of their
  // id (migration 011); a reference table on Citus, read beside each user's shard.
  erasures: 'user_digest',
  // A verified pair belongs to its tenant, read by all its users (migration 023): a reference table on
  // Citus. Its author is a column, not its key: an adopted pair outlives its author.
  verified_pairs: 'pair_id',
};

interface Key {
  table: string;
  index: string;
  primary: boolean;
  columns: string[];
}

describe('the schema stays distributable (Citus shards by tenant or by user)', () => {
  let t: TestApp;
  let keys: Key[];
  let tables: string[];

  beforeAll(async () => {
    t = await startTestApp();
    // Every unique index (primary keys and unique constraints are backed by one; partial ones too),
    // its key columns in order; an expression column reads as '(expression)'.
    ({ rows: keys } = await t.admin.query<Key>(
      `SELECT c.relname AS table, i.relname AS index, x.indisprimary AS primary,
              array(SELECT coalesce(a.attname::text, '(expression)')
                    FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
                    WHERE k.n <= x.indnkeyatts
                    ORDER BY k.n) AS columns
       FROM pg_index x
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_class c ON c.oid = x.indrelid
       JOIN pg_namespace s ON s.oid = c.relnamespace
       WHERE s.nspname = current_schema() AND x.indisunique
       ORDER BY 1, 2`,
    ));
    const { rows } = await t.admin.query<{ table: string }>(
      `SELECT c.relname AS table FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
       WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY 1`,
    );
    tables = rows.map((r) => r.table);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('when the migrations have run, then every primary key and unique key leads with tenant_id and the user', () => {
    // An exemption names a table that exists, so none outlives its table unnoticed.
    expect(tables).toEqual(expect.arrayContaining(Object.keys(EXEMPT)));
    const userData = tables.filter((table) => !(table in EXEMPT));
    expect(userData).toEqual(
      expect.arrayContaining([
        'sessions',
        'turns',
        'gdpr_audit',
        'gdpr_exports',
        'idempotency_keys',
        'job_outbox',
        'access_audit',
        'api_keys',
      ]),
    );
    // A table without a primary key would pass the check below by having no key at all.
    expect(userData.filter((table) => !keys.some((k) => k.table === table && k.primary))).toEqual([]);

    const wrong = keys
      .filter((k) => !(k.table in EXEMPT))
      .filter((k) => k.columns[0] !== 'tenant_id' || k.columns[1] !== (USER_COLUMN[k.table] ?? 'user_id'))
      .map((k) => `${k.table}.${k.index} (${k.columns.join(', ')})`);
    expect(wrong).toEqual([]);
  });
});
