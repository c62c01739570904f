import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { loadMigrationFiles, migrate as runMigrations } from 'postgres-migrations';
import { withClient } from './client-checkout.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/**
 * Applies the numbered SQL files in services/db/migrations (`NNN_name.sql`, numbered 1, 2, 3… without gaps) that
 * are not yet recorded, with postgres-migrations: each in its own transaction unless the file contains
 * `-- postgres-migrations disable-transaction` (for `CREATE INDEX CONCURRENTLY` and the like), under an
 * advisory lock so that two instances starting together apply each file once, and refusing to run when
 * an applied file was edited since (its SHA-1 is kept in the `migrations` table).
 * Returns the applied files' names without `.sql`, e.g. `007_add_index`.
 */
export async function migrate(pool: pg.Pool, log: (msg: string) => void = () => {}, directory: string = MIGRATIONS_DIR): Promise<string[]> {
  return withClient(pool, async (client) => {
    try {
      await assertPgvectorAvailable(client);
      await adoptLegacyLedger(client, directory);
      const applied = await runMigrations({ client }, directory);
      const versions = applied.filter((m) => m.id > 0).map((m) => m.fileName.replace(/\.sql$/, ''));
      for (const version of versions) log(`applied migration ${version}`);
      return versions;
    } catch (err) {
      if (err instanceof MigrationError) throw err;
      const edited = /Hashes don't match for migrations '([^']+)'/.exec((err as Error).message)?.[1];
      if (edited) {
        throw new MigrationError(
          `services/db/migrations/${edited.split(',').join(', ')} changed after it was applied to this database (its checksum differs): ` +
            'restore the applied file and put the change in a new migration',
          { cause: err },
        );
      }
      throw new MigrationError(`migrating the database failed: ${(err as Error).message}`, { cause: err });
    }
  });
}

/**
 * Databases migrated before postgres-migrations list their applied files in `schema_migrations`
 * (`version` = file name without `.sql`), without checksums. The first run of the new runner records
 * those files in its own ledger with the checksums of the files as they are now, so that nothing is
 * applied twice. It holds the old runner's table lock meanwhile, so an instance of the previous release
 * starting during a rolling update waits; `schema_migrations` is left as it was (a rollback still reads it).
 */
async function adoptLegacyLedger(client: pg.PoolClient, directory: string): Promise<void> {
  const { rows } = await client.query<{ legacy: boolean; adopted: boolean }>(
    `SELECT to_regclass('schema_migrations') IS NOT NULL AS legacy, to_regclass('migrations') IS NOT NULL AS adopted`,
  );
  if (!rows[0]!.legacy || rows[0]!.adopted) return;
  await client.query('BEGIN');
  try {
    await client.query('LOCK TABLE schema_migrations IN EXCLUSIVE MODE');
    // Another instance may have adopted the ledger while this one waited for the lock.
    if ((await client.query(`SELECT to_regclass('migrations') IS NOT NULL AS adopted`)).rows[0].adopted) {
      await client.query('COMMIT');
      return;
    }
    const [ledger, ...shipped] = await loadMigrationFiles(directory);
    const files = new Map(shipped.map((m) => [m.fileName.replace(/\.sql$/, ''), m]));
    const versions = (await client.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version')).rows;
    // The table as postgres-migrations creates it (its migration 0), which it then finds and keeps.
    await client.query(`CREATE TABLE migrations (
      id integer PRIMARY KEY,
      name varchar(100) UNIQUE NOT NULL,
      hash varchar(40) NOT NULL,
      executed_at timestamp DEFAULT current_timestamp)`);
    // Its own migration 0 too: it reads the ledger as an array indexed by id.
    await client.query('INSERT INTO migrations (id, name, hash) VALUES ($1, $2, $3)', [ledger!.id, ledger!.name, ledger!.hash]);
    for (const { version } of versions) {
      const file = files.get(version);
      if (!file) {
        throw new MigrationError(
          `the database has migration ${version} applied, which services/db/migrations does not have: it was migrated by a newer release`,
        );
      }
      await client.query('INSERT INTO migrations (id, name, hash) VALUES ($1, $2, $3)', [file.id, file.name, file.hash]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
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
        `(Debian 13+, Ubuntu, or the PostgreSQL apt repository: apt-get install postgresql-${major}-pgvector; ` +
        "Debian 12's own repositories lack it: scripts/install-pgvector.sh in memorychat's repository builds Debian's package; " +
        'or use the pgvector/pgvector image; ' +
        'managed services: enable the "vector" extension), or unset DATABASE_URL to use the embedded database.',
    );
  }
}
