import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type pg from 'pg';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/**
 * Applies the numbered SQL files in db/migrations that are not yet recorded, each in its own
 * transaction, under a lock so that two instances starting together apply each file once.
 */
export async function migrate(pool: pg.Pool, log: (msg: string) => void = () => {}): Promise<string[]> {
  const client = await pool.connect();
  try {
    await assertPgvectorAvailable(client);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
    const applied: string[] = [];
    for (const file of files) {
      const version = file.replace(/\.sql$/, '');
      await client.query('BEGIN');
      try {
        await client.query('LOCK TABLE schema_migrations IN EXCLUSIVE MODE');
        const done = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [version]);
        if (done.rowCount === 0) {
          await client.query(await readFile(path.join(MIGRATIONS_DIR, file), 'utf8'));
          await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
          applied.push(version);
          log(`applied migration ${version}`);
        }
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new MigrationError(`migration ${file} failed: ${(err as Error).message}`, { cause: err });
      }
    }
    return applied;
  } finally {
    client.release();
  }
}

async function assertPgvectorAvailable(client: pg.PoolClient): Promise<void> {
  const { rows } = await client.query<{ available: boolean; version: string }>(
    `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available,
            current_setting('server_version_num') AS version`,
  );
  if (!rows[0]!.available) {
    const major = Math.floor(Number(rows[0]!.version) / 10000);
    throw new MigrationError(
      'the database at DATABASE_URL has no pgvector extension. Install it on the database server ' +
        `(Debian/Ubuntu: apt-get install postgresql-${major}-pgvector; or use the pgvector/pgvector image; ` +
        'managed services: enable the "vector" extension), or unset DATABASE_URL to use the embedded database.',
    );
  }
}
