import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../db/migrate.js';

// The machine's PostgreSQL server (127.0.0.1:5432) has no pgvector unless someone installed it.
const SERVER_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

async function serverWithoutPgvector(): Promise<boolean> {
  const pool = new pg.Pool({ connectionString: SERVER_URL, max: 1, connectionTimeoutMillis: 2000 });
  try {
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'`);
    return rows[0].n === 0;
  } catch {
    return false;
  } finally {
    await pool.end();
  }
}

describe.runIf(await serverWithoutPgvector())('a DATABASE_URL server without pgvector', () => {
  it('when migrating, then it stops with a message saying how to install pgvector', async () => {
    const pool = new pg.Pool({ connectionString: SERVER_URL, max: 1 });
    try {
      await expect(migrate(pool)).rejects.toThrow(/apt-get install postgresql-\d+-pgvector/);
      const { rows } = await pool.query(`SELECT to_regclass('public.turns') AS turns`);
      expect(rows[0].turns).toBeNull();
    } finally {
      await pool.end();
    }
  });
});
