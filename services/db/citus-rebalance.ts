import type pg from 'pg';

/**
 * Moves shards onto the cluster's workers as Citus's rebalancer plans, with writes going on
 * (docs/scaling.md#rebalancing). Citus moves a shard by copying it and following its writes by
 * logical replication, applied on the new worker by a role Citus makes for the move: a member of the
 * tables' owner, neither superuser nor BYPASSRLS. PostgreSQL (15 and later) refuses to apply a change
 * to a table whose row-level security applies to that role, and FORCE ROW LEVEL SECURITY, which every
 * memorychat table has, applies it to the owner and its members too. So the first write to a shard
 * during its move stops the move's replication, retried every few seconds, failing each time, until
 * citus.logical_replication_timeout (2 h) ends the move with an error; the rebalancer then retries it.
 *
 * While it runs, the tables' FORCE is lifted: the service's statements still meet every policy, as
 * they run as memorychat_app or memorychat_maintenance, which own nothing; only a statement of the
 * owner login outside any scope would read past them. FORCE comes back when the rebalance ends or
 * fails, on every Citus table with row-level security (all of memorychat's), so running this again
 * after an interrupted run restores it too.
 *
 * Runs as the tables' owner (the service's migration login) or a superuser.
 */
export async function rebalanceCitus(pool: pg.Pool): Promise<void> {
  await refuseAsynchronousCommit(pool);
  await setForcedRowSecurity(pool, false);
  try {
    await pool.query('SELECT citus_rebalance_start()');
    await pool.query('SELECT citus_rebalance_wait()');
  } finally {
    await setForcedRowSecurity(pool, true);
  }
}

/** FORCE or NO FORCE on every Citus table (distributed or reference) that has row-level security enabled. */
async function setForcedRowSecurity(pool: pg.Pool, forced: boolean): Promise<void> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT p.logicalrelid::regclass::text AS name
     FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
     WHERE c.relrowsecurity ORDER BY 1`,
  );
  // A statement each (Citus sends it on to the table's shards): holding one table's lock at a time,
  // waiting only for the statements on that table, and never in a cycle with a request's statements.
  for (const { name } of rows) await pool.query(`ALTER TABLE ${name} ${forced ? '' : 'NO '}FORCE ROW LEVEL SECURITY`);
}

/**
 * A move switches over once the new worker has applied the source's WAL up to its write position
 * (pg_current_wal_lsn(), Citus's multi_logical_replication.c). With synchronous_commit off a commit is
 * acknowledged while its record may still be in WAL buffers, beyond that position: such a write can
 * miss the switch-over and stay on the placement the move drops, an acknowledged turn lost
 * (docs/scaling.md#rebalancing; scripts/citus/lost-write-repro.ts reproduces it). So no rebalance
 * starts while a worker commits that way.
 */
async function refuseAsynchronousCommit(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ node: string; setting: string }>(
    `SELECT nodename || ':' || nodeport AS node, result AS setting FROM run_command_on_workers('SHOW synchronous_commit') ORDER BY 1`,
  );
  const asynchronous = rows.filter((r) => r.setting === 'off').map((r) => r.node);
  if (asynchronous.length > 0) {
    throw new Error(
      `synchronous_commit is off on ${asynchronous.join(', ')}: a shard move could drop writes acknowledged just before its ` +
        'switch-over; set it to on (the default) on every worker before rebalancing (docs/scaling.md#rebalancing)',
    );
  }
}
