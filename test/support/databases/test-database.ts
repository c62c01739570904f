import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { startEmbeddedPostgres } from '../../../services/db/embedded/embedded-postgres.js';
import type { Database } from '../../../services/db/pool.js';
import { scopedDatabase } from '../../../services/db/row-security.js';
import { droppedDatabasePool, SERVER, SUPERUSER } from './postgres-server.js';
import { startTcpFaultProxy, type TcpFaultProxy } from './tcp-fault-proxy.js';

/** The pool size of a deployment (docs/configuration.md's default), used by the service in the `server` project. */
const SERVER_POOL_MAX = 10;

/** Provided in the `server` and `citus` projects (vitest.config.ts, test/support/vitest/global-setup-server.ts, global-setup-citus.ts). */
const server = inject('serverDatabase');
/** The PostgreSQL server the tests' databases are on: the machine's, or the Citus coordinator. */
const host = { host: server?.host ?? SERVER.host, port: server?.port ?? SERVER.port };
/** Provided in the `citus` project only: its databases are made on every node of the cluster. */
const citus = inject('citusCluster') as
  | { coordinator: { host: string; port: number }; workers: { host: string; port: number }[] }
  | undefined;

/**
 * On the Citus cluster, the files that load it most run one at a time: each holds a session advisory
 * lock on the coordinator from its `beforeAll` to its `afterAll` (closing the connection releases it).
 * Side by side on 2 cores the large export took 246 s, past its 240 s bound, where
 * alone it takes 82-103 s; the sequencer's order kept them apart only while the other Citus files
 * outlasted the export. Elsewhere it does nothing. Returns the release.
 */
export async function aloneOnTheCluster(): Promise<() => Promise<void>> {
  if (!citus) return async () => {};
  const client = new pg.Client({ ...citus.coordinator, user: SUPERUSER, database: 'postgres' });
  await client.connect();
  await client.query('SELECT pg_advisory_lock($1)', [HEAVY_CITUS_FILE_LOCK]);
  return async () => {
    await client.end();
  };
}
const HEAVY_CITUS_FILE_LOCK = 4_311_043;
/** How long a heavy file may wait for the other: the isolation property's limit there (PROPERTY_TIME_LIMIT_MS) and more. */
export const CLUSTER_WAIT_MS = 900_000;

/** A migrated database of the test's own: an embedded one in a new DATA_DIR, or a new database on the server. */
export interface TestDatabase {
  /**
   * The configuration that points the service (or a child process) at it: a fresh DATA_DIR, and on
   * the server DATABASE_URL with the test login (no superuser, the database's owner) and a pool of 10.
   */
  env: { DATA_DIR: string; DATABASE_URL?: string; DATABASE_POOL_MAX?: string };
  /** On the server: the database and the login, for connections made around the service (a fault proxy). */
  server?: { database: string; user: string };
  /** Drops the database and removes DATA_DIR. */
  remove(): Promise<void>;
}

/** A fresh embedded database (copied from the migrated template) in its own directory; embedded project only. */
export async function freshDataDir(): Promise<string> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-test-'));
  await cp(inject('templateDataDir'), dataDir, { recursive: true });
  return dataDir;
}

export async function freshTestDatabase(): Promise<TestDatabase> {
  if (!server) {
    const dataDir = await freshDataDir();
    return { env: { DATA_DIR: dataDir }, remove: () => rm(dataDir, { recursive: true, force: true }) };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-test-'));
  const database = `${server.login}_${randomBytes(4).toString('hex')}`;
  // On Citus, a copy of the template on each node: the coordinator's metadata and the workers' shards.
  const nodes = citus ? [citus.coordinator, ...citus.workers] : [host];
  await Promise.all(
    nodes.map((node) =>
      asSuperuser(
        'postgres',
        (admin) => admin.query(`CREATE DATABASE ${database} TEMPLATE ${server.template} OWNER ${server.login}`),
        node,
      ),
    ),
  );
  return {
    env: {
      DATA_DIR: dataDir,
      DATABASE_URL: `postgres://${server.login}@${host.host}:${host.port}/${database}`,
      DATABASE_POOL_MAX: String(SERVER_POOL_MAX),
    },
    server: { database, user: server.login },
    async remove() {
      await Promise.all(
        nodes.map((node) => asSuperuser('postgres', (admin) => admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`), node)),
      );
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A pool that sees and writes every row, above row-level security, for tests that seed or inspect
 * the tables: the superuser. Embedded, that is the service's own (and only) connection `service`;
 * on the server, a superuser pool on the test's database, ended by `close`.
 */
export function adminPool(db: TestDatabase, service: Database): { pool: pg.Pool; close(): Promise<void> } {
  if (!db.server) return { pool: service.pool, close: async () => {} };
  const pool = droppedDatabasePool({ ...host, user: SUPERUSER, database: db.server.database, max: 2 });
  return { pool, close: () => pool.end() };
}

/** `run` on a superuser's connection to `database` on `node` (the server, or a Citus node). */
export async function asSuperuser<T>(database: string, run: (client: pg.Client) => Promise<T>, node = host): Promise<T> {
  const client = new pg.Client({ ...node, user: SUPERUSER, database });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * The test's database reached through a TCP fault proxy, so a test can cut connections the way a
 * network fault or a database restart does: one connection to the embedded server, or the service's
 * pool of 10 to the PostgreSQL server.
 */
export async function databaseBehindFaultProxy(db: TestDatabase): Promise<{ database: Database; proxy: TcpFaultProxy }> {
  const embedded = db.server ? undefined : await startEmbeddedPostgres(db.env.DATA_DIR);
  const proxy = await startTcpFaultProxy(embedded ? { path: path.join(embedded.connection.host, '.s.PGSQL.5432') } : host);
  const pool = new pg.Pool(
    db.server
      ? { host: '127.0.0.1', port: proxy.port, user: db.server.user, database: db.server.database, max: SERVER_POOL_MAX }
      : { host: '127.0.0.1', port: proxy.port, user: 'postgres', database: 'postgres', max: 1 },
  );
  pool.on('error', () => {}); // as openDatabase does: a dropped idle connection must not crash the process
  const database: Database = {
    pool,
    scoped: scopedDatabase(pool),
    embedded: Boolean(embedded),
    async close() {
      await pool.end();
      await proxy.close();
      await embedded?.stop();
    },
  };
  return { database, proxy };
}

/**
 * The bytes the connection's cached plans hold (its `CachedPlan*` memory contexts): what a plan cache
 * that never finds its entries grows by. A superuser's connection: only it may read its own contexts.
 */
export async function cachedPlanBytes(client: pg.Client | pg.Pool): Promise<number> {
  const { rows } = await client.query<{ bytes: string }>(
    `SELECT sum(total_bytes)::text AS bytes FROM pg_backend_memory_contexts WHERE name LIKE 'CachedPlan%'`,
  );
  return Number(rows[0]!.bytes);
}
