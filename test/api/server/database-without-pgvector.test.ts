import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../../services/db/migrate.js';

// A Postgres without pgvector: PGlite started without its vector extension (the machine's server has
// pgvector, from scripts/install-pgvector.sh), reached over the wire protocol like a DATABASE_URL.
// Starting PGlite in this process is most of the test's time (8.9 s in a CI run whose tests took half the
// time of the slowest CI seen): the bound of the other tests that start a database.
describe('a DATABASE_URL server without pgvector', () => {
  it('when migrating, then it stops with a message saying how to install pgvector', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-no-pgvector-'));
    const db = await PGlite.create();
    const server = new PGLiteSocketServer({ db, path: path.join(dir, '.s.PGSQL.5432'), maxConnections: 1 });
    await server.start();
    const pool = new pg.Pool({ host: dir, user: 'postgres', database: 'postgres', max: 1 });
    try {
      await expect(migrate(pool)).rejects.toThrow(/apt-get install postgresql-\d+-pgvector.*scripts\/install-pgvector\.sh/);
      const { rows } = await pool.query(`SELECT to_regclass('public.turns') AS turns`);
      expect(rows[0].turns).toBeNull();
    } finally {
      await pool.end();
      await server.stop();
      await db.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
