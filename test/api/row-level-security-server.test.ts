import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopedDatabase, type ScopedDatabase } from '../../db/row-security.js';

// The machine's PostgreSQL server, as a superuser only to create the login and database below.
const SERVER = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' };
const MIGRATIONS = fileURLToPath(new URL('../../db/migrations/', import.meta.url));

/**
 * The migrations for a server without pgvector (this machine's PostgreSQL 15: Debian bookworm ships
 * no pgvector package): the embedding column becomes real[], the only pgvector part of the schema.
 * Migration 005, the one under test, runs verbatim.
 */
async function migrationsWithoutPgvector(): Promise<string[]> {
  const files = (await readdir(MIGRATIONS)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  const texts = await Promise.all(files.map((f) => readFile(`${MIGRATIONS}${f}`, 'utf8')));
  return texts.map((text, i) =>
    files[i]!.startsWith('005_')
      ? text
      : text
          .replace('CREATE EXTENSION IF NOT EXISTS vector;', '')
          .replace(/embedding\s+vector,/, 'embedding real[],')
          .replace(/ALTER TABLE turns ALTER COLUMN embedding SET STORAGE PLAIN;/, ''),
  );
}

const insertSession = (tenant: string, user: string) =>
  `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at)
   VALUES ('${tenant}', '${user}', '${randomUUID()}', 'of ${user}', now(), now(), now() + interval '1 hour')`;

describe('row-level security on a Postgres server, with a login that owns the tables and is no superuser', () => {
  const login = `mc_rls_${randomUUID().slice(0, 8)}`;
  let admin: pg.Pool;
  let pool: pg.Pool;
  let db: ScopedDatabase;

  beforeAll(async () => {
    admin = new pg.Pool({ ...SERVER, max: 1 });
    await admin.query(`CREATE ROLE ${login} LOGIN CREATEROLE`);
    await admin.query(`CREATE DATABASE ${login} OWNER ${login}`);
    pool = new pg.Pool({ ...SERVER, user: login, database: login, max: 4 });
    for (const sql of await migrationsWithoutPgvector()) await pool.query(sql);
    db = scopedDatabase(pool);
    const maintenance = db.asMaintenance();
    for (const [tenant, user] of [['acme', 'alice'], ['acme', 'bob'], ['globex', 'alice']]) {
      await maintenance.query(insertSession(tenant!, user!));
    }
  });
  afterAll(async () => {
    await pool?.end();
    await admin.query(`DROP DATABASE IF EXISTS ${login}`);
    await admin.query(`DROP ROLE IF EXISTS ${login}`);
    await admin.end();
  });

  it('when a user scope runs a statement with no WHERE clause, then it sees only that user\'s rows', async () => {
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
