import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { loadDemoTables } from '../../../services/db/demo/demo-dataset.js';
import { droppedDatabasePool, SERVER, SUPERUSER } from './postgres-server.js';

const server = inject('serverDatabase') as { login: string } | undefined;

/** Where the sql answerer's statements run in a test, and a pool above it to check what the data holds. */
export interface SqlWarehouse {
  env: { SQL_DATABASE_URL: string };
  /** Server: the warehouse under the memory database's own login (the test login, its owner), which the service must refuse. */
  ownerUrl?: string;
  /** True for embedded-demo: the demo schema inside the test's embedded database (read it through the app's admin pool). */
  embedded: boolean;
  /** The server's warehouse as its owner, to check what the data holds. */
  pool?: pg.Pool;
  remove(): Promise<void>;
}

/**
 * Embedded project: `embedded-demo` (the service starts its engine). Server project: a database of
 * the test's own on the PostgreSQL server, owned by the test login (no superuser), holding the same
 * demo tables: a warehouse apart from the memory database, as in a deployment, read through a login
 * of its own that may read the demo schema and nothing else (README: the SQL login).
 */
export async function startSqlWarehouse(): Promise<SqlWarehouse> {
  if (!server) return { env: { SQL_DATABASE_URL: 'embedded-demo' }, embedded: true, remove: async () => {} };
  const database = `${server.login}_warehouse_${randomBytes(4).toString('hex')}`;
  await asSuperuser((admin) => admin.query(`CREATE DATABASE ${database} OWNER ${server.login}`));
  const reader = `${database}_reader`;
  await asSuperuser(async (admin) => {
    await admin.query(`CREATE ROLE ${reader} LOGIN NOSUPERUSER NOINHERIT`);
    await admin.query(`GRANT CONNECT ON DATABASE ${database} TO ${reader}`);
  });
  const url = `postgres://${server.login}@${SERVER.host}:${SERVER.port}/${database}`;
  const owner = new pg.Client({ connectionString: url });
  await owner.connect();
  try {
    await loadDemoTables(owner);
    await owner.query(`GRANT USAGE ON SCHEMA demo TO ${reader}; GRANT SELECT ON ALL TABLES IN SCHEMA demo TO ${reader}`);
  } finally {
    await owner.end();
  }
  const pool = droppedDatabasePool({ connectionString: url, max: 2 });
  return {
    env: { SQL_DATABASE_URL: `postgres://${reader}@${SERVER.host}:${SERVER.port}/${database}` },
    ownerUrl: url,
    embedded: false,
    pool,
    async remove() {
      await pool.end();
      await asSuperuser(async (admin) => {
        await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await admin.query(`DROP ROLE IF EXISTS ${reader}`);
      });
    },
  };
}

/** A statement as the server's superuser, on its `postgres` database. */
export async function asSuperuser<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ ...SERVER, user: SUPERUSER, database: 'postgres' });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * The service's settings for ANSWER_BACKEND=sql on this warehouse, with the real SDK of `provider`
 * pointed at a fake LLM: the part every SQL-answerer test shares; each adds its own limits.
 */
export function sqlAnswererEnv(
  warehouse: SqlWarehouse,
  llm: { provider: 'openai' | 'anthropic'; baseURL: string },
): Record<string, string> {
  return {
    ANSWER_BACKEND: 'sql',
    ...warehouse.env,
    SQL_SCHEMAS: 'demo',
    LLM_PROVIDER: llm.provider,
    LLM_MODEL: 'test-model',
    ...(llm.provider === 'openai'
      ? { OPENAI_API_KEY: 'test', OPENAI_BASE_URL: llm.baseURL }
      : { ANTHROPIC_API_KEY: 'test', ANTHROPIC_BASE_URL: llm.baseURL }),
  };
}
