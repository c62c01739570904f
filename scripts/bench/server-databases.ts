// `--server`: the bench's databases on a PostgreSQL server with pgvector instead of embedded data
// directories. A seeded stage is a database; each system gets its own copy of it (CREATE DATABASE ...
// TEMPLATE), so every system starts from the same data, as the embedded bench copies directories.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { DEFAULT_POOL_IDLE_SECONDS } from '../../services/config/groups/database.js';
import { migrate } from '../../services/db/migrate.js';
import type { Database } from '../../services/db/pool.js';
import { scopedDatabase } from '../../services/db/row-security.js';
import { childrenOf, cpuMsOf } from './rss.js';

/** A login that may create databases and the vector extension (this machine: trust auth as postgres). */
export const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function databaseUrl(name: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function databaseExists(name: string): Promise<boolean> {
  return admin(async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1);
}

/** Drops `name` if it exists and creates it, empty with pgvector or as a copy of `template`. */
export async function recreateDatabase(name: string, template?: string): Promise<void> {
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${template ? ` TEMPLATE ${pg.escapeIdentifier(template)}` : ''}`);
  });
  if (!template) {
    const c = new pg.Client({ connectionString: databaseUrl(name) });
    await c.connect();
    await c.query('CREATE EXTENSION IF NOT EXISTS vector');
    await c.end();
  }
}

export async function dropDatabase(name: string): Promise<void> {
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
}

/** A pool on one of the server's databases, shaped as db/pool.ts opens it (`max` connections, its idle timeout). */
export async function openServerDatabase(name: string, max: number, runMigrations = false): Promise<Database> {
  const pool = new pg.Pool({ connectionString: databaseUrl(name), max, idleTimeoutMillis: DEFAULT_POOL_IDLE_SECONDS * 1000 });
  pool.on('error', () => {});
  if (runMigrations) await migrate(pool);
  return { pool, scoped: scopedDatabase(pool), embedded: false, close: () => pool.end() };
}

let serverReader: (() => number) | undefined;

/**
 * CPU (ms) the whole server has used: the postmaster, its live children (backends, WAL writer,
 * checkpointer) and, through the postmaster's cutime/cstime, the backends that already exited. Only
 * one system runs at a time, so the difference over a slice is that system's database CPU.
 */
export async function serverCpuMs(): Promise<() => number> {
  serverReader ??= await admin(postmasterCpuMs);
  return serverReader;
}

/**
 * CPU (ms) of the server's processes working in `database`: its backends and autovacuum workers, found
 * by their process titles ("postgres: 15/main: USER DATABASE HOST ACTIVITY", "… autovacuum worker
 * DATABASE"). Unlike serverCpuMs, what others run on the same server (another bench, tests) is not
 * counted, nor a backend that exited (the systems' pools keep theirs); the server-wide WAL writer,
 * checkpointer and background writer only with `serverProcesses`.
 */
export async function databaseCpuMs(database: string, opts: { serverProcesses?: boolean } = {}): Promise<() => number> {
  const postmaster = await admin(postmasterPid);
  const counted = (pid: number) => {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      return title.split(' ').includes(database) || (opts.serverProcesses === true && SERVER_PROCESS.test(title));
    } catch {
      return false;
    }
  };
  const own = opts.serverProcesses ? () => cpuMsOf(postmaster) || 0 : () => 0;
  return () => own() + childrenOf(postmaster).reduce((sum, child) => sum + (counted(child) ? cpuMsOf(child) || 0 : 0), 0);
}

/**
 * The titles of a server's own processes, which serve every database on it: with `serverProcesses`,
 * databaseCpuMs counts them too (and the postmaster), as the Citus bench counts all of its cluster's.
 */
const SERVER_PROCESS = /: (walwriter|background writer|checkpointer|autovacuum launcher|logical replication launcher|archiver)$/;

async function postmasterPid(client: pg.Client): Promise<number> {
  const dataDir = (await client.query<{ d: string }>("SELECT current_setting('data_directory') AS d")).rows[0]!.d;
  return Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/** The CPU reader of `serverCpuMs` for the server `client` is connected to (on this machine). */
export async function postmasterCpuMs(client: pg.Client): Promise<() => number> {
  const pid = await postmasterPid(client);
  return () => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const waitedChildren = (Number(fields[13]) + Number(fields[14])) * 10;
    return cpuMsOf(pid) + waitedChildren + childrenOf(pid).reduce((sum, child) => sum + (cpuMsOf(child) || 0), 0);
  };
}

export async function serverVersion(): Promise<string> {
  return admin(async (c) => {
    const { rows } = await c.query<{ v: string; vector: string | null }>(
      "SELECT current_setting('server_version') AS v, (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS vector",
    );
    return `PostgreSQL ${rows[0]!.v}, pgvector ${rows[0]!.vector ?? '?'}`;
  });
}
