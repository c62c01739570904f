import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_MODEL } from '../../../services/config/config.js';
import { questionSearch } from '../../../services/core/search-terms/lexical-terms.js';
import type { Queryable } from '../../../services/db/repositories/queryable.js';
import { searchTurns } from '../../../services/db/repositories/turns.js';
import { embedText } from '../../../services/providers/embeddings/local-embedder.js';
import type { FakeUpstream } from '../../support/fakes/fake-upstream.js';
import { seedSession } from '../../support/service/seed-memory.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../support/service/service-with-upstream.js';
import type { TestApp } from '../../support/service/test-app.js';

const HOUR = 3_600_000;
const alice = { tenantId: 'acme', userId: 'alice' };
const bob = { tenantId: 'acme', userId: 'bob' };
const aliceElsewhere = { tenantId: 'globex', userId: 'alice' };

/** Runs statements as memorychat_app inside one transaction, with whatever identity the test sets. */
async function asAppRole<T>(pool: pg.Pool, settings: Record<string, string>, run: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL ROLE memorychat_app');
    for (const [name, value] of Object.entries(settings)) await client.query('SELECT set_config($1, $2, true)', [name, value]);
    return await run(client);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

/** The owners (tenant/user) of every row a statement returned, deduplicated. */
function owners(rows: { tenant_id: string; user_id: string }[]): string[] {
  return [...new Set(rows.map((r) => `${r.tenant_id}/${r.user_id}`))].sort();
}

describe('row-level security (docs/row-level-security.md)', () => {
  let t: TestApp;
  let upstream: FakeUpstream;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
    const expiresAt = new Date(Date.now() + HOUR);
    for (const who of [alice, bob, aliceElsewhere]) {
      await seedSession(t.admin, { ...who, turns: 5, expiresAt });
      // Through the API too, so idempotency keys and GDPR rows exist for each owner.
      const token = t.token(who.userId, { tenant: who.tenantId });
      const chat = await t.request('POST', '/memoryChat', {
        token,
        body: { question: `Show me total sales by region for 2024 (${who.tenantId}/${who.userId})` },
        headers: { 'idempotency-key': `rls-${who.tenantId}-${who.userId}` },
      });
      expect(chat.status).toBe(200);
      expect((await t.request('POST', '/me/export', { token })).status).toBe(202);
    }
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  it("when a statement with no WHERE clause runs in a user scope, then it sees only that user's rows in every table", async () => {
    const db = t.app.db.asUser(alice);
    for (const table of ['sessions', 'turns', 'idempotency_keys']) {
      const { rows } = await db.query(`SELECT tenant_id, user_id FROM ${table}`);
      expect(rows.length, table).toBeGreaterThan(0);
      expect(owners(rows), table).toEqual(['acme/alice']);
    }
    const { rows: audit } = await db.query('SELECT tenant_id, subject_user_id AS user_id FROM gdpr_audit');
    expect(owners(audit)).toEqual(['acme/alice']);

    // The control: the same statements, unscoped as the superuser, see all three owners.
    const { rows: all } = await t.admin.query('SELECT tenant_id, user_id FROM turns');
    expect(owners(all)).toEqual(['acme/alice', 'acme/bob', 'globex/alice']);
  });

  it("when the real search statement runs with its tenant and user filter removed, then it still finds only the caller's turns", async () => {
    const statements: pg.QueryConfig[] = [];
    const strippingFilter = (db: Queryable): Queryable => ({
      query(statement: string | pg.QueryConfig, values?: unknown[]) {
        const config = typeof statement === 'string' ? { text: statement, values } : statement;
        // The parameters stay referenced (so their types are known) but filter nothing, wherever the
        // statement filters the user's turns (the candidate lists and the turns read back).
        const text = config.text.replaceAll('t.tenant_id = $1 AND t.user_id = $2', '$1::text IS NOT NULL AND $2::text IS NOT NULL');
        expect(text, 'the filter to remove was not found').not.toBe(config.text);
        statements.push({ text, values: config.values });
        return db.query({ text, values: config.values });
      },
    });
    const request = {
      identity: { ...alice, roles: [] },
      now: new Date(),
      embedding: embedText('sales', 384)!,
      embeddingModel: `${LOCAL_MODEL}@384`,
      scope: {},
      k: 100,
      minSimilarity: -1,
      search: questionSearch('sales'),
    };
    const scoped = await searchTurns(strippingFilter(t.app.db.asUser(alice)), request);
    const unscoped = await searchTurns(strippingFilter(t.admin), request);

    expect(statements).toHaveLength(2);
    const { rows } = await t.admin.query('SELECT session_id::text, tenant_id, user_id FROM sessions');
    const ownerOf = new Map(rows.map((r) => [r.session_id, `${r.tenant_id}/${r.user_id}`]));
    const ownersOf = (hits: { session_id: string }[]) => [...new Set(hits.map((h) => ownerOf.get(h.session_id)))].sort();
    // Without row-level security the filterless statement finds everybody's turns ...
    expect(ownersOf(unscoped)).toEqual(['acme/alice', 'acme/bob', 'globex/alice']);
    // ... with it, only alice's of tenant acme: her 5 seeded turns and her /memoryChat turn.
    expect(ownersOf(scoped)).toEqual(['acme/alice']);
    expect(scoped).toHaveLength(6);
  });

  it('when no identity is set, then the app role sees no row at all', async () => {
    await asAppRole(t.database.pool, {}, async (client) => {
      for (const table of ['sessions', 'turns', 'idempotency_keys', 'gdpr_audit', 'gdpr_exports']) {
        const { rows } = await client.query(`SELECT count(*)::int AS n FROM ${table}`);
        expect(rows[0].n, table).toBe(0);
      }
    });
  });

  it('when the app role writes rows of another user, then Postgres refuses or touches nothing', async () => {
    const settings = { 'memorychat.tenant_id': 'acme', 'memorychat.user_id': 'alice' };
    await expect(
      asAppRole(t.database.pool, settings, (c) =>
        c.query(`INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at)
                 VALUES ('acme', 'bob', gen_random_uuid(), 'planted', now(), now(), now() + interval '1 hour')`),
      ),
    ).rejects.toThrow(/row-level security/);
    const changed = await asAppRole(t.database.pool, settings, async (c) => {
      const updated = await c.query(`UPDATE turns SET question = 'overwritten' WHERE user_id = 'bob'`);
      const deleted = await c.query(`DELETE FROM sessions WHERE tenant_id = 'globex'`);
      return (updated.rowCount ?? 0) + (deleted.rowCount ?? 0);
    });
    expect(changed).toBe(0);
    // Moving one's own row to another owner is refused as well.
    await expect(
      asAppRole(t.database.pool, settings, (c) => c.query(`UPDATE sessions SET user_id = 'bob' WHERE user_id = 'alice'`)),
    ).rejects.toThrow(/row-level security/);
  });

  it('when the app role tries to switch row security off, then every way is refused', async () => {
    const settings = { 'memorychat.tenant_id': 'acme', 'memorychat.user_id': 'alice' };
    const attempts = [
      'ALTER TABLE turns DISABLE ROW LEVEL SECURITY',
      'ALTER TABLE turns NO FORCE ROW LEVEL SECURITY',
      'DROP POLICY own_rows ON turns',
      'CREATE POLICY everything ON turns TO memorychat_app USING (true)',
      'GRANT memorychat_maintenance TO memorychat_app',
    ];
    // PostgreSQL 15 refuses the GRANT with "must have admin option", 16 and later (PGlite) with "permission denied".
    for (const sql of attempts) {
      await expect(
        asAppRole(t.database.pool, settings, (c) => c.query(sql)),
        sql,
      ).rejects.toThrow(/must be owner|permission denied|must have admin option/);
    }
    // row_security = off makes a statement that policies would filter fail instead of bypassing them.
    await expect(
      asAppRole(t.database.pool, settings, async (c) => {
        await c.query('SET LOCAL row_security = off');
        return c.query('SELECT * FROM turns');
      }),
    ).rejects.toThrow(/row-level security/);

    const { rows } = await t.admin.query(
      `SELECT rolname, rolsuper, rolbypassrls, rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname LIKE 'memorychat\\_%' ORDER BY rolname`,
    );
    expect(rows).toEqual([
      { rolname: 'memorychat_app', rolsuper: false, rolbypassrls: false, rolcreaterole: false, rolcanlogin: false },
      { rolname: 'memorychat_maintenance', rolsuper: false, rolbypassrls: false, rolcreaterole: false, rolcanlogin: false },
    ]);
  });

  it('when a table is added, then it must carry forced row-level security with policies for both roles', async () => {
    const { rows } = await t.admin.query<{ table: string; enabled: boolean; forced: boolean; roles: string[] | null }>(
      `SELECT c.relname AS table, c.relrowsecurity AS enabled, c.relforcerowsecurity AS forced,
              (SELECT array_agg(DISTINCT r::text ORDER BY r::text) FROM pg_policies p, unnest(p.roles) r
               WHERE p.schemaname = 'public' AND p.tablename = c.relname) AS roles
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname NOT IN ('schema_migrations', 'migrations')
       ORDER BY c.relname`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(5);
    for (const row of rows) {
      expect(row, row.table).toMatchObject({ enabled: true, forced: true, roles: ['memorychat_app', 'memorychat_maintenance'] });
    }
    // The login is a member of memorychat_maintenance: its policies must hold only while that role is taken.
    const { rows: maintenance } = await t.admin.query<{ table: string; qual: string }>(
      `SELECT tablename AS table, qual FROM pg_policies WHERE schemaname = 'public' AND 'memorychat_maintenance' = ANY (roles)`,
    );
    expect(maintenance.map((p) => p.table).sort()).toEqual(rows.map((r) => r.table));
    for (const policy of maintenance) expect(policy.qual, policy.table).toMatch(/current_user = 'memorychat_maintenance'/i);
  });

  it('when a scoped statement fails, then the connection it held (embedded: the only one) goes to the next caller clean', async () => {
    await expect(t.app.db.asUser(alice).query('SELECT 1/0')).rejects.toThrow(/division by zero/);
    const { rows } = await t.app.db
      .asUser(bob)
      .query<{ user_id: string; role: string }>(`SELECT current_setting('memorychat.user_id') AS user_id, current_user AS role`);
    expect(rows).toEqual([{ user_id: 'bob', role: 'memorychat_app' }]);
    // The service's own pool (the pool hands out the connection released last): no identity, and the
    // connection's login again rather than a role taken by a scope.
    const after = await t.database.pool.query<{ user_id: string | null; role: string; login: string }>(
      `SELECT nullif(current_setting('memorychat.user_id', true), '') AS user_id, current_user AS role, session_user AS login`,
    );
    expect(after.rows).toEqual([{ user_id: null, role: after.rows[0]!.login, login: after.rows[0]!.login }]);
    expect(after.rows[0]!.login).not.toMatch(/^memorychat_/);
  });
});
