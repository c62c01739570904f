// Reproduces the lost write of docs/scaling.md#rebalancing on a Citus test cluster of its own. A shard
// move switches over once the new placement's subscription reports the source's WAL position as read
// by pg_current_wal_lsn(): the WAL *written* (Citus's multi_logical_replication.c). With
// synchronous_commit = off a worker acknowledges a commit before writing its record, which the WAL
// writer writes within wal_writer_delay, so an acknowledged commit can lie beyond that position and
// stay on the placement the move drops. Writers append rows for users of one shard through the
// coordinator, each row acknowledged once its INSERT returns; the shard is moved back and forth
// between the two workers; then every acknowledged row is looked up, and the lost ones on the source
// placement too, right after each move (Citus drops it later). Each run is made with the workers'
// synchronous_commit off, then on, the same workload and WAL writer settings.
//
// The defaults lose rows with off: one writer, a row every 100 ms, a WAL writer that writes every
// 10 s and flushes whatever it writes. With --stall-wal-writer the source worker's WAL writer is also
// stopped (SIGSTOP) for 400 ms of every 500 during each move, as a WAL writer starved of CPU would be.
//
//   npm run bench -- citus-lost-write [--runs 3] [--moves 4] [--writers 1] [--pause-ms 100]
//     [--wal-writer-delay 10s] [--wal-writer-flush-after 0] [--stall-wal-writer]
// Prints, for each run and setting, acknowledged / stored / lost (and how many of the lost rows were
// on the dropped placement), then the totals per setting.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { type CitusCluster, type CitusNode, startCitusCluster } from '../../test/support/databases/citus-cluster.js';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    moves: { type: 'string', default: '4' },
    writers: { type: 'string', default: '1' },
    'wal-writer-delay': { type: 'string', default: '10s' },
    'wal-writer-flush-after': { type: 'string', default: '0' },
    'stall-wal-writer': { type: 'boolean', default: false },
    'pause-ms': { type: 'string', default: '100' },
  },
});
const RUNS = Number(args.runs);
const MOVES = Number(args.moves);
const WRITERS = Number(args.writers);
const PAUSE_MS = Number(args['pause-ms']);
const SETTINGS = ['off', 'on'] as const;
type Setting = (typeof SETTINGS)[number];

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const log = (msg: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface RunResult {
  acknowledged: number;
  stored: number;
  lost: number;
  /** Lost rows found on the placement a move left behind. */
  onDroppedPlacement: number;
  failed: number;
}

/** How every worker commits, and a WAL writer that writes an asynchronous commit only after wal_writer_delay. */
async function configureWorkers(cluster: CitusCluster, setting: Setting): Promise<void> {
  for (const worker of cluster.workers) {
    await cluster.asSuperuser(worker, 'postgres', async (c) => {
      await c.query(`ALTER SYSTEM SET synchronous_commit = ${setting}`);
      await c.query(`ALTER SYSTEM SET wal_writer_delay = ${pg.escapeLiteral(args['wal-writer-delay']!)}`);
      await c.query(`ALTER SYSTEM SET wal_writer_flush_after = ${pg.escapeLiteral(args['wal-writer-flush-after']!)}`);
      await c.query('SELECT pg_reload_conf()');
    });
  }
}

/** Users whose rows all land in one shard of `acked`, and that shard. */
async function usersOfOneShard(admin: pg.Client, count: number): Promise<{ shard: number; users: string[] }> {
  const { rows } = await admin.query<{ shard: string; users: string[] }>(
    `SELECT get_shard_id_for_distribution_column('acked', 'user-' || i) AS shard, array_agg('user-' || i ORDER BY i) AS users
     FROM generate_series(0, 999) AS i GROUP BY 1 ORDER BY 1 LIMIT 1`,
  );
  return { shard: Number(rows[0]!.shard), users: rows[0]!.users.slice(0, count) };
}

async function placementOf(admin: pg.Client, shard: number): Promise<CitusNode> {
  const { rows } = await admin.query<{ nodename: string; nodeport: number }>(
    'SELECT nodename, nodeport FROM pg_dist_shard_placement WHERE shardid = $1',
    [shard],
  );
  return { host: rows[0]!.nodename, port: rows[0]!.nodeport };
}

/** Appends rows 1, 2, ... for `user` through the coordinator until stopped; the numbers it was told were stored. */
function startWriter(cluster: CitusCluster, database: string, user: string) {
  let writing = true;
  const acknowledged: number[] = [];
  let failed = 0;
  const done = (async () => {
    const client = new pg.Client({ ...cluster.coordinator, user: 'postgres', database });
    client.on('error', () => {});
    await client.connect();
    for (let n = 1; writing; n++) {
      try {
        await client.query('INSERT INTO acked (user_id, n) VALUES ($1, $2)', [user, n]);
        acknowledged.push(n);
      } catch {
        failed += 1;
      }
      if (PAUSE_MS > 0) await sleep(PAUSE_MS);
    }
    await client.end();
  })();
  return {
    async stop() {
      writing = false;
      await done;
      return { user, acknowledged, failed };
    },
  };
}

async function run(cluster: CitusCluster, index: number, setting: Setting): Promise<RunResult> {
  const database = `repro_${index}_${setting}`;
  await configureWorkers(cluster, setting);
  await cluster.createDatabase(database, 'postgres');
  const admin = new pg.Client({ ...cluster.coordinator, user: 'postgres', database });
  await admin.connect();
  try {
    const { rows: reported } = await admin.query<{ result: string }>(
      "SELECT result FROM run_command_on_workers('SHOW synchronous_commit')",
    );
    if (reported.some((r) => r.result !== setting)) throw new Error(`the workers report synchronous_commit ${JSON.stringify(reported)}`);
    await admin.query('CREATE TABLE acked (user_id text NOT NULL, n integer NOT NULL, PRIMARY KEY (user_id, n))');
    await admin.query("SELECT create_distributed_table('acked', 'user_id')");
    const { shard, users } = await usersOfOneShard(admin, WRITERS);
    const writers = users.map((user) => startWriter(cluster, database, user));
    const onDroppedPlacements = new Set<string>();
    await sleep(1000);
    for (let move = 0; move < MOVES; move++) {
      const from = await placementOf(admin, shard);
      const to = cluster.workers.find((w) => w.port !== from.port)!;
      const t0 = performance.now();
      const stall = args['stall-wal-writer'] ? await stallWalWriter(cluster, from) : undefined;
      await admin
        .query("SELECT citus_move_shard_placement($1, $2, $3, $4, $5, shard_transfer_mode => 'force_logical')", [
          shard,
          from.host,
          from.port,
          to.host,
          to.port,
        ])
        .finally(() => stall?.stop());
      log(`  moved shard ${shard} from :${from.port} to :${to.port} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      // Before Citus drops the old placement (deferred, citus.defer_shard_delete_interval): what it holds.
      for (const key of await rowsOfPlacement(cluster, database, from, shard)) onDroppedPlacements.add(key);
      await sleep(500);
    }
    const results = await Promise.all(writers.map((w) => w.stop()));
    const { rows: stored } = await admin.query<{ user_id: string; n: number }>('SELECT user_id, n FROM acked WHERE user_id = ANY($1)', [
      users,
    ]);
    const storedKeys = new Set(stored.map((r) => `${r.user_id}/${r.n}`));
    const lostKeys = results.flatMap((r) => r.acknowledged.map((n) => `${r.user}/${n}`)).filter((k) => !storedKeys.has(k));
    return {
      acknowledged: results.reduce((sum, r) => sum + r.acknowledged.length, 0),
      stored: stored.length,
      lost: lostKeys.length,
      onDroppedPlacement: lostKeys.filter((k) => onDroppedPlacements.has(k)).length,
      failed: results.reduce((sum, r) => sum + r.failed, 0),
    };
  } finally {
    await admin.end();
    await cluster.dropDatabase(database);
  }
}

/** Stops the node's WAL writer for 400 ms of every 500 until stop() (which leaves it running). */
async function stallWalWriter(cluster: CitusCluster, node: CitusNode) {
  const pid = await cluster.asSuperuser(node, 'postgres', async (c) => {
    const { rows } = await c.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'");
    return rows[0]!.pid;
  });
  let stalling = true;
  const loop = (async () => {
    while (stalling) {
      process.kill(pid, 'SIGSTOP');
      await sleep(400);
      process.kill(pid, 'SIGCONT');
      await sleep(100);
    }
  })();
  return {
    async stop() {
      stalling = false;
      await loop;
    },
  };
}

/** The rows a placement holds, keyed user/n (none once Citus has dropped it). */
async function rowsOfPlacement(cluster: CitusCluster, database: string, node: CitusNode, shard: number): Promise<string[]> {
  return cluster.asSuperuser(node, database, async (c) => {
    const { rows } = await c
      .query<{ user_id: string; n: number }>(`SELECT user_id, n FROM acked_${shard}`)
      .catch(() => ({ rows: [] as { user_id: string; n: number }[] }));
    return rows.map((r) => `${r.user_id}/${r.n}`);
  });
}

const cluster = await startCitusCluster();
const totals = new Map<Setting, RunResult>(
  SETTINGS.map((s) => [s, { acknowledged: 0, stored: 0, lost: 0, onDroppedPlacement: 0, failed: 0 }]),
);
try {
  log(
    `${RUNS} runs per setting, ${MOVES} moves each, ${WRITERS} writers on the moving shard's users, wal_writer_delay ` +
      `${args['wal-writer-delay']}, wal_writer_flush_after ${args['wal-writer-flush-after']}` +
      `${args['stall-wal-writer'] ? ', the WAL writer stalled during moves' : ''}, a pause of ${PAUSE_MS} ms after each row (load average ${load()})`,
  );
  for (let i = 0; i < RUNS; i++) {
    for (const setting of SETTINGS) {
      const r = await run(cluster, i, setting);
      log(
        `run ${i + 1}, synchronous_commit ${setting}: acknowledged ${r.acknowledged}, stored ${r.stored}, lost ${r.lost} ` +
          `(${r.onDroppedPlacement} of them on the dropped placement), failed ${r.failed} (load average ${load()})`,
      );
      const total = totals.get(setting)!;
      for (const key of Object.keys(r) as (keyof RunResult)[]) total[key] += r[key];
    }
  }
  for (const [setting, t] of totals) {
    log(
      `synchronous_commit ${setting}, ${RUNS} runs: acknowledged ${t.acknowledged}, stored ${t.stored}, lost ${t.lost} ` +
        `(${t.onDroppedPlacement} on the dropped placement), failed ${t.failed}`,
    );
  }
} finally {
  await cluster.stop();
}
