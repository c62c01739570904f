import pg from 'pg';
import type { Config } from '../services/core/config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded/embedded-postgres.js';

export interface Database {
  pool: pg.Pool;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * The server's Postgres at DATABASE_URL with a normal pool, or the embedded one with a pool of
 * exactly one connection: never wait for a second connection while holding the first.
 */
export async function openDatabase(config: Pick<Config, 'DATABASE_URL' | 'DATABASE_POOL_MAX' | 'DATA_DIR'>): Promise<Database> {
  if (config.DATABASE_URL) {
    const pool = new pg.Pool({ connectionString: config.DATABASE_URL, max: config.DATABASE_POOL_MAX });
    return { pool, embedded: false, close: () => pool.end() };
  }
  const embedded: EmbeddedPostgres = await startEmbeddedPostgres(config.DATA_DIR);
  const pool = new pg.Pool({ ...embedded.connection, max: 1, idleTimeoutMillis: 0 });
  return {
    pool,
    embedded: true,
    async close() {
      await pool.end();
      await embedded.stop();
    },
  };
}
