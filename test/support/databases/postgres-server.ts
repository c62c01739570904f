import pg from 'pg';

/** The machine's PostgreSQL server (README: trust auth, pgvector from scripts/install-pgvector.sh). */
export const SERVER = { host: '127.0.0.1', port: 5432 };
/** Creates the test logins and databases, and creates pgvector, which is not a trusted extension. */
export const SUPERUSER = 'postgres';

/**
 * A pool on a database the test drops WITH (FORCE) when it ends. pool.end() resolves before its
 * connections have closed, so the drop may terminate one still open: its backend's FATAL reaches an
 * idle client, the pool emits 'error', and with no listener that ends the test process.
 */
export function droppedDatabasePool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  pool.on('error', () => {});
  return pool;
}
