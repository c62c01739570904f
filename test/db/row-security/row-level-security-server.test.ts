import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScopedDatabase, scopedDatabase } from '../../../services/db/row-security.js';
import { droppedDatabasePool } from '../../support/databases/postgres-server.js';
import { freshTestDatabase, type TestDatabase } from '../../support/databases/test-database.js';

// Only in the `server` project (vitest.config.ts): the database is a copy of the template that the
// test login, no superuser, owns and migrated with the real migrations (test/support/vitest/global-setup-server.ts).

const insertSession = (tenant: string, user: string) =>
  `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at)
   VALUES ('${tenant}', '${user}', '${randomUUID()}', 'of ${user}', now(), now(), now() + interval '1 hour')`;

describe('row-level security on a Postgres server, with a login that owns the tables and is no superuser', () => {
  let testDatabase: TestDatabase;
  let pool: pg.Pool;
  let db: ScopedDatabase;

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    pool = droppedDatabasePool({ connectionString: testDatabase.env.DATABASE_URL, max: 4 });
    db = scopedDatabase(pool);
    const maintenance = db.asMaintenance();
    for (const [tenant, user] of [
      ['acme', 'alice'],
      ['acme', 'bob'],
      ['globex', 'alice'],
    ]) {
      await maintenance.query(insertSession(tenant!, user!));
    }
  });
  afterAll(async () => {
    await pool?.end();
    await testDatabase?.remove();
  });

  it('when the service logs in, then it is no superuser, owns the tables, and the embedding is a pgvector column', async () => {
    const { rows } = await pool.query(
      `SELECT r.rolsuper, r.rolbypassrls, t.tableowner = current_user AS owns_turns,
              format_type(a.atttypid, a.atttypmod) AS embedding_type
       FROM pg_roles r, pg_tables t, pg_attribute a
       WHERE r.rolname = current_user AND t.schemaname = 'public' AND t.tablename = 'turns'
         AND a.attrelid = 'turns'::regclass AND a.attname = 'embedding'`,
    );
    expect(rows).toEqual([{ rolsuper: false, rolbypassrls: false, owns_turns: true, embedding_type: 'vector' }]);
  });

  it("when a user scope runs a statement with no WHERE clause, then it sees only that user's rows", async () => {
    const { rows } = await db.asUser({ tenantId: 'acme', userId: 'alice' }).query('SELECT tenant_id, user_id FROM sessions');
    expect(rows).toEqual([{ tenant_id: 'acme', user_id: 'alice' }]);
    const all = await db.asMaintenance().query('SELECT count(*)::int AS n FROM sessions');
    expect(all.rows[0].n).toBe(3);
  });

  it('when the owning login runs a statement without taking a scope, then it sees and writes nothing', async () => {
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM sessions');
    expect(rows[0].n).toBe(0);
    await expect(pool.query(insertSession('acme', 'mallory'))).rejects.toThrow(/row-level security/);
  });

  it('when a user scope tries to lift the policies or write for another user, then Postgres refuses', async () => {
    const alice = db.asUser({ tenantId: 'acme', userId: 'alice' });
    await expect(alice.query('ALTER TABLE sessions DISABLE ROW LEVEL SECURITY')).rejects.toThrow(/must be owner/);
    await expect(alice.query('DROP POLICY own_rows ON sessions')).rejects.toThrow(/must be owner/);
    await expect(alice.query(insertSession('acme', 'bob'))).rejects.toThrow(/row-level security/);
    const { rowCount } = await alice.query(`DELETE FROM sessions WHERE user_id = 'bob'`);
    expect(rowCount).toBe(0);
  });
});
