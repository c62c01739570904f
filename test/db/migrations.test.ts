// The migration runner (db/migrate.ts, postgres-migrations) on the machine's PostgreSQL server (with
// pgvector), each test in a database of its own: checksums, steps outside a transaction, concurrent
// starts, and databases migrated by the runner before it (a `schema_migrations` ledger) taken over.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../services/db/migrate.js';

const SERVER = { host: '127.0.0.1', port: 5432, user: 'postgres' };
const MIGRATIONS = fileURLToPath(new URL('../../services/db/migrations/', import.meta.url));
const admin = new pg.Pool({ ...SERVER, database: 'postgres', max: 1 });
const created: { name: string; pools: pg.Pool[] }[] = [];
const dirs: string[] = [];

/** A new, empty database on the server and a way to open pools on it (closed and dropped afterwards). */
async function freshDatabase() {
  const name = `mc_migrate_${randomUUID().slice(0, 8)}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const entry = { name, pools: [] as pg.Pool[] };
  created.push(entry);
  const open = (max = 2) => {
    const pool = new pg.Pool({ ...SERVER, database: name, max });
    // The teardown's DROP DATABASE … WITH (FORCE) ends connections a closing pool still holds.
    pool.on('error', (err) => {
      if ((err as { code?: string }).code !== '57P01') throw err;
    });
    entry.pools.push(pool);
    return pool;
  };
  return { name, url: `postgres://postgres@127.0.0.1:5432/${name}`, open };
}

/** A migrations directory of the test's own. */
async function migrationsDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-migrations-'));
  dirs.push(dir);
  for (const [name, sql] of Object.entries(files)) await writeFile(path.join(dir, name), sql);
  return dir;
}

/** The runner memorychat had before postgres-migrations, as it was: one transaction per file under a table lock. */
async function migrateAsBefore(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    for (const file of (await readdir(MIGRATIONS)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort()) {
      const version = file.replace(/\.sql$/, '');
      await client.query('BEGIN');
      await client.query('LOCK TABLE schema_migrations IN EXCLUSIVE MODE');
      if ((await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [version])).rowCount === 0) {
        await client.query(await readFile(path.join(MIGRATIONS, file), 'utf8'));
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
      }
      await client.query('COMMIT');
    }
  } finally {
    client.release();
  }
}

const shippedVersions = async () =>
  (await readdir(MIGRATIONS))
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => f.replace(/\.sql$/, ''));

describe('the migration runner', () => {
  afterAll(async () => {
    for (const { name, pools } of created) {
      await Promise.all(pools.map((p) => p.end()));
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
    await admin.end();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('when an applied migration is edited, then the next run refuses with a message naming the file and applies nothing', async () => {
    const db = await freshDatabase();
    const pool = db.open();
    const dir = await migrationsDir({ '001_notes.sql': 'CREATE TABLE notes (id int PRIMARY KEY);\n' });
    expect(await migrate(pool, () => {}, dir)).toEqual(['001_notes']);

    await writeFile(path.join(dir, '001_notes.sql'), 'CREATE TABLE notes (id int PRIMARY KEY, body text);\n');
    await writeFile(path.join(dir, '002_more.sql'), 'CREATE TABLE more_notes (id int);\n');
    await expect(migrate(pool, () => {}, dir)).rejects.toThrow(/001_notes\.sql changed after it was applied.*checksum/);
    const { rows } = await pool.query(
      `SELECT to_regclass('more_notes') AS more, (SELECT count(*)::int FROM migrations WHERE id > 0) AS recorded`,
    );
    expect(rows[0]).toEqual({ more: null, recorded: 1 });
  });

  it('when the service starts on a database whose applied migration was edited, then it exits with that message', async () => {
    const db = await freshDatabase();
    const pool = db.open();
    await migrate(pool);
    // As if 001 had been edited after it was applied: the recorded checksum no longer matches the file.
    await pool.query(`UPDATE migrations SET hash = repeat('0', 40) WHERE id = 1`);
    const child = spawn(process.execPath, ['dist/services/api/server.js'], {
      env: { PATH: process.env.PATH, DATABASE_URL: db.url, JWT_SECRET: 'x'.repeat(32), PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.resume();
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/^memorychat: services\/db\/migrations\/001_sessions_and_turns\.sql changed after it was applied/m);
  }, 60_000);

  it('when a migration is marked disable-transaction, then it runs outside a transaction (CREATE INDEX CONCURRENTLY); unmarked, it could not', async () => {
    const table = 'CREATE TABLE events (id int PRIMARY KEY, at timestamptz);\n';
    const index = 'CREATE INDEX CONCURRENTLY events_at ON events (at);\n';

    const unmarked = (await freshDatabase()).open();
    const inTransaction = await migrationsDir({ '001_events.sql': table, '002_events_at.sql': index });
    await expect(migrate(unmarked, () => {}, inTransaction)).rejects.toThrow(/cannot run inside a transaction block/);

    const db = await freshDatabase();
    const pool = db.open();
    const outside = await migrationsDir({
      '001_events.sql': table,
      '002_events_at.sql': `-- postgres-migrations disable-transaction\n${index}`,
    });
    expect(await migrate(pool, () => {}, outside)).toEqual(['001_events', '002_events_at']);
    const { rows } = await pool.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'events' AND indexname = 'events_at'`);
    expect(rows).toHaveLength(1);
    expect(await migrate(pool, () => {}, outside)).toEqual([]);
  });

  it('when two instances migrate a new database at once, then each file is applied exactly once', async () => {
    const db = await freshDatabase();
    const [a, b] = await Promise.all([migrate(db.open(1)), migrate(db.open(1))]);
    expect([...a, ...b].sort()).toEqual(await shippedVersions());
    const { rows } = await db
      .open()
      .query<{ name: string; n: number }>('SELECT name, count(*)::int AS n FROM migrations WHERE id > 0 GROUP BY name HAVING count(*) > 1');
    expect(rows).toEqual([]);
  });

  it('when a database was migrated by the runner before postgres-migrations, then the new runner applies nothing again, keeps the data and then migrates forward', async () => {
    const db = await freshDatabase();
    const pool = db.open(4);
    await migrateAsBefore(pool);
    const session = randomUUID();
    await pool.query(
      `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at)
       VALUES ('acme', 'alice', $1, 'kept', now(), now(), now() + interval '1 day')`,
      [session],
    );
    const legacy = (await pool.query('SELECT version, applied_at FROM schema_migrations ORDER BY version')).rows;
    expect(legacy.map((r) => r.version)).toEqual(await shippedVersions());

    // Two instances of the new release start together on the old ledger.
    const [a, b] = await Promise.all([migrate(db.open(1)), migrate(db.open(1))]);
    expect([a, b]).toEqual([[], []]);
    const recorded = await pool.query<{ id: number; name: string }>('SELECT id, name FROM migrations ORDER BY id');
    expect(recorded.rows.map((r) => r.id)).toEqual([0, ...legacy.map((_, i) => i + 1)]);
    expect((await pool.query('SELECT version, applied_at FROM schema_migrations ORDER BY version')).rows).toEqual(legacy);
    expect((await pool.query('SELECT session_name FROM sessions WHERE session_id = $1', [session])).rows).toEqual([
      { session_name: 'kept' },
    ]);

    // The next release's migration is applied, and only it.
    const next = await mkdtemp(path.join(tmpdir(), 'memorychat-migrations-'));
    dirs.push(next);
    await cp(MIGRATIONS, next, { recursive: true });
    const version = `${String(legacy.length + 1).padStart(3, '0')}_session_notes`;
    await writeFile(path.join(next, `${version}.sql`), 'ALTER TABLE sessions ADD COLUMN notes text;\n');
    const log: string[] = [];
    expect(await migrate(pool, (m) => log.push(m), next)).toEqual([version]);
    expect(log).toEqual([`applied migration ${version}`]);
    expect((await pool.query('SELECT session_name, notes FROM sessions WHERE session_id = $1', [session])).rows).toEqual([
      { session_name: 'kept', notes: null },
    ]);
  }, 60_000);

  it('when the old ledger lists a migration the release does not have, then the runner stops and says the database is newer', async () => {
    const db = await freshDatabase();
    const pool = db.open();
    await migrateAsBefore(pool);
    await pool.query(`INSERT INTO schema_migrations (version) VALUES ('999_from_the_future')`);
    await expect(migrate(pool)).rejects.toThrow(/999_from_the_future.*newer release/);
    expect((await pool.query(`SELECT to_regclass('migrations') AS t`)).rows[0].t).toBeNull();
  });
});
