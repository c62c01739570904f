import type pg from 'pg';
import { rebuildMemoryKb, withBuildMemory } from './ann-index-upkeep.js';
import { withClient } from './client-checkout.js';
import type { UserTable } from './user-tables.js';

export interface ErasedRowsReclaimOptions {
  /**
   * Also purge the erased tables' column statistics (they hold sampled values, the erased user's
   * among them) and retire the WAL that held the rows: for the embedded database, which runs no
   * autovacuum and retires its WAL only when told. A server's autovacuum and checkpoints do both.
   */
  purgeStatisticsAndWal: boolean;
  /**
   * Rewrite the tables (VACUUM FULL) instead: new files, the old ones deleted, so no byte of the erased
   * rows stays in a page's free space; every other request waits for the rewrite (ERASE_RECLAIM=rewrite).
   */
  rewrite: boolean;
}

/**
 * Frees the space of an erasure's deleted rows: a plain VACUUM of each table, never a rewrite, as the
 * login that owns the tables (VACUUM needs the owner), outside any transaction (VACUUM cannot run in
 * one). It reads and writes no row, so no scope is taken.
 *
 * Each table is its own statement: the embedded database runs one statement at a time on its one
 * connection, and the pool hands that connection to the requests queued meanwhile between two of
 * them. A plain VACUUM reads only the pages that are not all-visible (those written since the last
 * one) and, while fewer than 2% of a table's pages hold dead rows, leaves its indexes for a later one
 * (INDEX_CLEANUP AUTO): so what it holds the connection for follows the rows changed since the last
 * VACUUM, not the other users' rows. A rewrite (VACUUM FULL) copied every other user's row and
 * rebuilt every index: 135 MB of another user's turns held every tenant for 2 to 13 s
 * (docs/gdpr-storage.md).
 */
export async function reclaimErasedRows(pool: pg.Pool, tables: readonly UserTable[], options: ErasedRowsReclaimOptions): Promise<void> {
  if (tables.length === 0) return;
  if (!options.purgeStatisticsAndWal) {
    for (const table of tables) await pool.query(`VACUUM (ANALYZE) ${table}`);
    return;
  }
  if (options.rewrite) await rewriteTables(pool, tables);
  for (const table of tables) {
    if (!options.rewrite) await pool.query(`VACUUM ${table}`);
    // A table the erase emptied keeps its old statistics through an ANALYZE (which samples no row and
    // writes nothing), so they are deleted first; their old rows then leave pg_statistic's pages.
    await pool.query('DELETE FROM pg_statistic WHERE starelid = $1::regclass', [table]);
    await pool.query(`ANALYZE ${table}`);
  }
  // The catalog of statistics: a few rows per column of each table, whatever the tables hold.
  await pool.query('VACUUM FULL pg_statistic');
  // The rows are also in the WAL: a new segment, then two checkpoints, let Postgres remove the
  // older segments (the embedded database runs with wal_recycle=off, so they are deleted, not reused).
  await pool.query('SELECT pg_switch_wal()');
  await pool.query('CHECKPOINT');
  await pool.query('CHECKPOINT');
}

/**
 * A rewrite builds every index again, the approximate ones too, whose k-means needs more than the
 * embedded database's 16 MB of maintenance_work_mem (db/ann-index-upkeep.ts).
 */
async function rewriteTables(pool: pg.Pool, tables: readonly UserTable[]): Promise<void> {
  await withClient(pool, async (client) => {
    await withBuildMemory(client, await rebuildMemoryKb(client), () => client.query(`VACUUM FULL ${tables.join(', ')}`));
  });
}
