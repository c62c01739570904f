import pg from 'pg';
import type { Config } from '../config/config.js';
import { DEFAULT_POOL_IDLE_SECONDS } from '../config/groups/database.js';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded/embedded-postgres.js';
import { keepTableStatistics } from './embedded/table-statistics.js';
import { type ScopedDatabase, scopedDatabase } from './row-security.js';

export interface Database {
  /** Unscoped: migrations, and tests and scripts that seed or inspect the tables. */
  pool: pg.Pool;
  /** What the service's code uses: every statement under row-level security. */
  scoped: ScopedDatabase;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * The server's Postgres at DATABASE_URL with a normal pool, or the embedded one with a pool of
 * exactly one connection: never wait for a second connection while holding the first.
 */
export async function openDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'DATABASE_POOL_MAX' | 'DATA_DIR'> &
    Partial<Pick<Config, 'DATABASE_POOL_IDLE_SECONDS' | 'eraseReclaimWindowMs' | 'ERASE_RECLAIM' | 'EMBEDDED_SHARED_BUFFERS_MB'>>,
  options: { onIdleClientError?: (err: Error) => void } = {},
): Promise<Database> {
  if (config.DATABASE_URL) {
    const pool = survivingIdleErrors(
      new pg.Pool({
        connectionString: config.DATABASE_URL,
        max: config.DATABASE_POOL_MAX,
        idleTimeoutMillis: (config.DATABASE_POOL_IDLE_SECONDS ?? DEFAULT_POOL_IDLE_SECONDS) * 1000,
      }),
      options.onIdleClientError,
    );
    return {
      pool,
      scoped: scopedDatabase(pool, { reclaimWindowMs: config.eraseReclaimWindowMs }),
      embedded: false,
      close: () => pool.end(),
    };
  }
  const embedded: EmbeddedPostgres = await startEmbeddedPostgres(config.DATA_DIR, { sharedBuffersMb: config.EMBEDDED_SHARED_BUFFERS_MB });
  const pool = survivingIdleErrors(new pg.Pool({ ...embedded.connection, max: 1, idleTimeoutMillis: 0 }), options.onIdleClientError);
  const statistics = keepTableStatistics(pool);
  return {
    pool,
    scoped: scopedDatabase(pool, {
      purgeStatisticsAndWal: true,
      rewriteErasedTables: config.ERASE_RECLAIM === 'rewrite',
      blockingIndexBuilds: true,
      reclaimWindowMs: config.eraseReclaimWindowMs,
    }),
    embedded: true,
    async close() {
      statistics.stop();
      await pool.end();
      await embedded.stop();
    },
  };
}

/**
 * An idle connection that breaks (a database restart, a network fault) is dropped by the pool and
 * the next query reconnects; without an 'error' listener the pool's event would crash the process.
 * pg-pool hangs the whole client on the error (`err.client`): a logged error would carry every
 * prepared statement's text and the connection's settings, so it is taken off first.
 */
function survivingIdleErrors(pool: pg.Pool, onError: (err: Error) => void = () => {}): pg.Pool {
  pool.on('error', (err) => {
    delete (err as Error & { client?: unknown }).client;
    onError(err);
  });
  return pool;
}
