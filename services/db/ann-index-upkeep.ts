import type pg from 'pg';
import { withClient } from './client-checkout.js';
import { ANN_INDEXES } from './repositories/hybrid-rank.js';
import type { Queryable } from './repositories/queryable.js';

/**
 * Keeps each approximate index's lists in step with its rows (migration 020). An IVFFlat index's lists
 * are fixed by k-means over the rows present when it is built; the rows added later (turns of users
 * crossing the threshold, migration 017) join their nearest list, so the search stays exact about what
 * the index holds but reads longer lists. Built again with √rows lists (per shard on Citus, where each
 * shard holds its own index of its own rows) once that is off by more than 2x either way: the build
 * reads the index's rows once (7 s for 110,000 rows on the server, docs/performance.md).
 */
export interface AnnIndexState {
  index: string;
  /** Rows the index holds, per shard on Citus. */
  rows: number;
  /** Lists the index had; null when it was missing. */
  lists: number | null;
  /** Lists it was built again with, when it was. */
  rebuiltWith?: number;
}

export interface AnnIndexUpkeepOptions {
  /** The login that owns the tables (an index is built by its owner), outside any transaction. */
  pool: pg.Pool;
  /** Counts the index's rows: the owner is held to row-level security (migration 005), the maintenance role reads every user's. */
  maintenance: Queryable;
  onCitus: () => Promise<boolean>;
  /**
   * Build with plain CREATE INDEX, which blocks writes to `turns` meanwhile: for the embedded
   * database, whose one connection has no other session to keep serving. Elsewhere CONCURRENTLY,
   * and the old index is dropped the same way.
   */
  blocking: boolean;
}

/** A key of its own for pg_try_advisory_lock: one upkeep at a time across processes. */
const UPKEEP_LOCK = 0x6d63_4956;

/** The lists an index of `rows` rows is built with. */
export function listsFor(rows: number): number {
  return Math.max(1, Math.round(Math.sqrt(rows)));
}

/**
 * maintenance_work_mem (kB) that building an index of `lists` lists of `dimension`-dimensional vectors
 * needs, as pgvector counts it before refusing the build ("memory required is …"): its k-means
 * sample (50 rows per list, at least 10,000) with, per sampled row, a bound to each list; the lists'
 * centres several times over; a tenth more. The embedded database's default of 16 MB refused 148
 * lists of 384 dimensions (22 MB), a server's 64 MB would refuse 1,536 dimensions at any size.
 */
export function buildMemoryKb(lists: number, dimension: number): number {
  const item = 8 + 4 * dimension;
  const samples = Math.max(10_000, lists * 50);
  const bytes = samples * (item + 4 * lists + 12) + lists * (3 * item + 4 * lists + 16);
  return Math.ceil((bytes * 1.1) / 1024) + 1024;
}

/** Within 2x of √rows either way: left as it is, so a rebuild follows a 4x change of the rows. */
function inStep(lists: number, rows: number): boolean {
  const target = listsFor(rows);
  return lists * 2 >= target && lists <= target * 2;
}

/** Checks each approximate index and builds again those out of step; [] when another process holds the upkeep. */
export async function maintainAnnIndexes(options: AnnIndexUpkeepOptions): Promise<AnnIndexState[]> {
  // Counted before a connection is held for the builds: the embedded database has only one.
  const shards = (await options.onCitus())
    ? Number(
        (await options.maintenance.query(`SELECT greatest(count(*), 1) AS n FROM pg_dist_shard WHERE logicalrelid = 'turns'::regclass`))
          .rows[0].n,
      )
    : 1;
  const counted: { model: string; rows: number }[] = [];
  for (const model of ANN_INDEXES.keys()) {
    const { rows } = await options.maintenance.query<{ n: string }>(
      'SELECT count(*) AS n FROM turns WHERE embedding_model = $1 AND ann_indexed',
      [model],
    );
    counted.push({ model, rows: Math.ceil(Number(rows[0]!.n) / shards) });
  }
  return withClient(options.pool, async (client) => {
    if (!(await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [UPKEEP_LOCK])).rows[0]!.locked) return [];
    try {
      const states: AnnIndexState[] = [];
      for (const { model, rows } of counted) {
        const { index, dimension } = ANN_INDEXES.get(model)!;
        const lists = await listsOf(client, index);
        const state: AnnIndexState = { index, rows, lists };
        if (lists === null || !inStep(lists, rows)) {
          state.rebuiltWith = listsFor(rows);
          await rebuild(client, options.blocking, { index, model, dimension, lists: state.rebuiltWith });
        }
        states.push(state);
      }
      return states;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [UPKEEP_LOCK]);
    }
  });
}

/**
 * Runs `work` on `client` with the maintenance_work_mem that building the approximate indexes as they
 * are needs (or more, when the session has more), then gives the session its setting back: for a
 * build of one index, and for statements that rebuild all of a table's indexes (VACUUM FULL after an
 * erase on the embedded database with ERASE_RECLAIM=rewrite). Outside a transaction as CONCURRENTLY
 * is, so a session setting.
 */
export async function withBuildMemory<T>(client: pg.PoolClient, kb: number, work: () => Promise<T>): Promise<T> {
  const { rows } = await client.query<{ kb: string }>(`SELECT setting AS kb FROM pg_settings WHERE name = 'maintenance_work_mem'`);
  const before = Number(rows[0]!.kb);
  await client.query(`SET maintenance_work_mem = '${Math.max(before, Math.ceil(kb))}kB'`);
  try {
    return await work();
  } finally {
    await client.query(`SET maintenance_work_mem = '${before}kB'`);
  }
}

/** What building every approximate index again, with the lists it has now, needs (buildMemoryKb): the largest. */
export async function rebuildMemoryKb(client: pg.PoolClient): Promise<number> {
  let kb = 0;
  for (const { index, dimension } of ANN_INDEXES.values()) {
    const lists = await listsOf(client, index);
    if (lists !== null) kb = Math.max(kb, buildMemoryKb(lists, dimension));
  }
  return kb;
}

async function listsOf(client: pg.PoolClient, index: string): Promise<number | null> {
  const { rows } = await client.query<{ lists: string | null }>(
    `SELECT coalesce((SELECT o.option_value FROM pg_options_to_table(c.reloptions) o WHERE o.option_name = 'lists'), '100') AS lists
     FROM pg_class c WHERE c.oid = to_regclass($1)`,
    [index],
  );
  return rows[0] ? Number(rows[0].lists) : null;
}

/**
 * Builds the index anew beside the old one, then gives it the old one's name in one transaction and
 * drops the old one: the name the search reads the index's size by always resolves, and the search
 * reads either index meanwhile. What a run that failed half-way left (CONCURRENTLY leaves an invalid
 * index) is dropped first. Names and model ids come from ANN_INDEXES, never from input.
 */
async function rebuild(
  client: pg.PoolClient,
  blocking: boolean,
  target: { index: string; model: string; dimension: number; lists: number },
): Promise<void> {
  const concurrently = blocking ? '' : 'CONCURRENTLY';
  const next = `${target.index}_rebuild`;
  const retired = `${target.index}_retired`;
  await client.query(`DROP INDEX ${concurrently} IF EXISTS ${next}`);
  await client.query(`DROP INDEX ${concurrently} IF EXISTS ${retired}`);
  // Citus sends the setting on with the shards' builds.
  await withBuildMemory(client, buildMemoryKb(target.lists, target.dimension), () =>
    client.query(
      `CREATE INDEX ${concurrently} ${next} ON turns USING ivfflat ((embedding::vector(${target.dimension})) vector_ip_ops)
       WITH (lists = ${target.lists}) WHERE embedding_model = ${client.escapeLiteral(target.model)} AND ann_indexed`,
    ),
  );
  await client.query('BEGIN');
  try {
    await client.query(`ALTER INDEX IF EXISTS ${target.index} RENAME TO ${retired}`);
    await client.query(`ALTER INDEX ${next} RENAME TO ${target.index}`);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
  await client.query(`DROP INDEX ${concurrently} IF EXISTS ${retired}`);
}
