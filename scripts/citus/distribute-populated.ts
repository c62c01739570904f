// Moving a populated single-server database to Citus (docs/scaling.md#moving-to-citus), measured as an
// operator would do it: a database migrated on a single server (all migrations: 016 changes nothing
// there), seeded by scripts/bench/bulk-seed.ts, then citus created on every node and the workers
// added, and then the tables distributed while a writer appends a turn every 50 ms:
//   - `blocking`: migration 016's file run again by hand (create_distributed_table, one transaction);
//   - `concurrently`: sessions and turns with create_distributed_table_concurrently (their foreign
//     key dropped meanwhile: Citus refuses one between a local and a distributed table), the foreign
//     key added back NOT VALID and validated, then 016's file for the small tables.
// With `--mode both` (the default) the seeded database is copied (CREATE DATABASE ... TEMPLATE) and each
// copy is distributed one way. Prints each step's time, the writer's turns and failures and its
// longest wait (what a request would have waited).
//
//   npm run bench -- citus-move [--users 10000] [--turns-per-user 100] [--mode both]
//     [--writer service|plain|none]   (none: the time of a maintenance window, nothing writing)
//     [--blocking-writer service|plain|none]   (the writer beside the blocking way; --writer's by default)
//     [--worker-maintenance-work-mem 512MB]   (the workers' budget for building the shards' indexes;
//                                              the test cluster's 64MB by default)
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { questionSearch, turnSearchTerms } from '../../services/core/search-terms/lexical-terms.js';
import { migrate } from '../../services/db/migrate.js';
import { retrieveMemory } from '../../services/db/repositories/memory-retrieval.js';
import { appendTurn } from '../../services/db/repositories/turn-append.js';
import { scopedDatabase } from '../../services/db/row-security.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { type CitusCluster, startCitusCluster } from '../../test/support/databases/citus-cluster.js';
import { bulkSeed, withoutAnnIndexes } from '../bench/bulk-seed.js';
import { TENANT, userId } from '../bench/data.js';
import { measureSearch } from '../bench/scale.js';
import { DIMENSIONS, EMBEDDING_MODEL } from '../bench/seed.js';

const { values: args } = parseArgs({
  options: {
    users: { type: 'string', default: '10000' },
    'turns-per-user': { type: 'string', default: '100' },
    mode: { type: 'string', default: 'both' },
    writer: { type: 'string', default: 'service' },
    'blocking-writer': { type: 'string' },
    'worker-maintenance-work-mem': { type: 'string' },
  },
});
const USERS = Number(args.users);
const TPU = Number(args['turns-per-user']);
// The non-blocking way first: it is the one docs/scaling.md recommends.
const MODES = args.mode === 'both' ? ['concurrently', 'blocking'] : [args.mode!];
if (MODES.some((m) => m !== 'blocking' && m !== 'concurrently')) throw new Error('--mode is blocking, concurrently or both');
const WRITERS = { concurrently: args.writer!, blocking: args['blocking-writer'] ?? args.writer! } as Record<string, string>;
if (Object.values(WRITERS).some((w) => !['service', 'plain', 'none'].includes(w))) {
  throw new Error('--writer and --blocking-writer are service, plain or none');
}
const DISTRIBUTION = new URL('../../services/db/migrations/016_citus_distribution.sql', import.meta.url);
const FUNCTIONS = new URL('./distribute-functions.sql', import.meta.url);
const LATER_TABLES = new URL('./distribute-later-tables.sql', import.meta.url);
/** The feedback's foreign key to turns (migration 023): a local table's, which create_distributed_table_concurrently refuses. */
const FEEDBACK_TO_TURNS = 'verified_pair_feedback_tenant_id_user_id_session_id_turn_n_fkey';
const LOGIN = 'mc_distribute';
/** The tables too large to block writes while they are copied. */
/**
 * turns first: while it is copied, its rows stay on the coordinator (a Citus local table until the
 * split at the end), so the service's statements joining it to sessions still run; they fail only
 * from then until sessions, the small tables and the functions are distributed too (the window).
 */
const LARGE: [table: string, column: string, colocateWith: string][] = [
  ['turns', 'user_id', 'default'],
  ['sessions', 'user_id', 'turns'],
];

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const log = (msg: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);

interface Writer {
  stop(): Promise<WriterResult>;
}
interface WriterResult {
  written: number;
  failed: string[];
  longest: number;
  /** Seconds from the writer's start to its first and its last failure. */
  failing?: [number, number];
}

/**
 * Every 50 ms, until stopped, a request's work for one user, as the service does it (`service`: the
 * service's own append and retrieval statements in the caller's scope, by a service started after the
 * citus extension was created, so in the shape it gives them on Citus), or one plain INSERT of a turn.
 */
async function startWriter(cluster: CitusCluster, database: string, kind: string): Promise<Writer> {
  if (kind === 'none') return { stop: async () => ({ written: 0, failed: [], longest: 0 }) };
  return kind === 'service' ? startServiceWriter(cluster, database) : startPlainWriter(cluster, database);
}

async function startServiceWriter(cluster: CitusCluster, database: string): Promise<Writer> {
  const pool = new pg.Pool({ ...cluster.coordinator, user: 'postgres', database, max: 2 });
  pool.on('error', () => {});
  const db = scopedDatabase(pool);
  const identity = { tenantId: TENANT, userId: userId(0), roles: [] };
  const scope = db.asUser(identity);
  const sessionId = crypto.randomUUID();
  const question = 'How many singers do we have?';
  const embedding = embedText(question, DIMENSIONS)!;
  return writeEvery50ms(
    async (written) => {
      const now = new Date();
      await retrieveMemory(scope, {
        identity,
        sessionId,
        now,
        windowSize: 5,
        k: 3,
        minSimilarity: 0.25,
        embedding,
        embeddingModel: EMBEDDING_MODEL,
        search: questionSearch(question),
        scope: { requested: [] },
      });
      const stored = await appendTurn(scope, {
        identity,
        sessionId,
        ...(written === 0 ? { createWithName: 'writer' } : {}),
        now,
        ttlMs: 7 * 86_400_000,
        ttlMode: 'sliding',
        eraseEpoch: 0,
        turn: {
          status: 'ok',
          question,
          augmentedQuestion: null,
          answer: 'a',
          sqlQuery: 'SELECT count(*) FROM singer',
          queryExplanation: null,
          tablesUsed: ['singer'],
          vdpDatabaseNames: ['concert_singer'],
          executionResult: null,
          metadata: {},
          embedding,
          embeddingModel: EMBEDDING_MODEL,
          searchTerms: turnSearchTerms({ question, sqlQuery: 'SELECT count(*) FROM singer', tablesUsed: ['singer'] }),
        },
      });
      if (!stored) throw new Error('the session was not found');
    },
    () => pool.end(),
  );
}

async function startPlainWriter(cluster: CitusCluster, database: string): Promise<Writer> {
  const client = new pg.Client({ ...cluster.coordinator, user: 'postgres', database });
  await client.connect();
  const session = crypto.randomUUID();
  await client.query(
    `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
     VALUES ($1, $2, $3, 'writer', now(), now(), now() + interval '7 days', 0, 0)`,
    [TENANT, userId(0), session],
  );
  return writeEvery50ms(
    async (written) => {
      await client.query(
        `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer)
         VALUES ($1, $2, $3, $4, now(), 'ok', 'q', 'a')`,
        [TENANT, userId(0), session, written + 1],
      );
    },
    () => client.end(),
  );
}

/**
 * Runs `write` every 50 ms (given how many succeeded so far) until stopped, then `close`; counts what
 * succeeded, what failed and when, and the longest call.
 */
function writeEvery50ms(write: (written: number) => Promise<void>, close: () => Promise<unknown>): Writer {
  let writing = true;
  let longest = 0;
  let written = 0;
  const failed: string[] = [];
  const began = performance.now();
  let failing: [number, number] | undefined;
  const loop = (async () => {
    while (writing) {
      const t0 = performance.now();
      try {
        await write(written);
        written += 1;
      } catch (err) {
        failed.push((err as Error).message);
        const at = (performance.now() - began) / 1000;
        failing = [failing?.[0] ?? at, at];
      }
      longest = Math.max(longest, performance.now() - t0);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await close();
  })();
  return {
    async stop() {
      writing = false;
      await loop;
      return { written, failed, longest, ...(failing ? { failing } : {}) };
    },
  };
}

/**
 * Samples the coordinator every 100 ms while the tables are distributed: the lock modes taken on
 * turns and sessions (by whom: the distribution, or the writer), and each statement seen waiting
 * for a lock, with how long it had waited when last seen.
 */
function watchLocks(cluster: CitusCluster, database: string) {
  const client = new pg.Client({ ...cluster.coordinator, user: 'postgres', database });
  client.on('error', () => {});
  let watching = true;
  const held = new Set<string>();
  const waits = new Map<string, number>();
  const loop = (async () => {
    await client.connect();
    while (watching) {
      const { rows } = await client.query<{ lock: string | null; waiting: string | null; ms: number | null }>(
        `SELECT CASE WHEN l.granted THEN c.relname || ' ' || l.mode || ' (' || coalesce(nullif(left(a.query, 40), ''), a.backend_type) || ')' END AS lock,
                CASE WHEN NOT l.granted THEN left(a.query, 60) || ' for ' || l.mode || ' on ' || c.relname END AS waiting,
                CASE WHEN NOT l.granted THEN (extract(epoch FROM clock_timestamp() - a.state_change) * 1000)::int END AS ms
         FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND c.relname IN ('turns', 'sessions') AND a.pid <> pg_backend_pid()`,
      );
      for (const r of rows) {
        if (r.lock) held.add(r.lock);
        if (r.waiting) waits.set(r.waiting, Math.max(waits.get(r.waiting) ?? 0, r.ms ?? 0));
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await client.end();
  })();
  return {
    async stop() {
      watching = false;
      await loop;
      return { held: [...held], waits: [...waits].map(([what, ms]) => `${what} (${ms} ms)`) };
    },
  };
}

/** What the operator runs first: the database and citus on every worker, citus on the coordinator, the workers added. */
async function addCitus(cluster: CitusCluster, database: string): Promise<void> {
  for (const worker of cluster.workers) {
    await cluster.asSuperuser(worker, 'postgres', (c) => c.query(`CREATE DATABASE ${database} OWNER ${LOGIN}`));
    await cluster.asSuperuser(worker, database, async (c) => {
      await c.query('CREATE EXTENSION citus; CREATE EXTENSION vector');
      await c.query(`UPDATE pg_extension SET extowner = '${LOGIN}'::regrole WHERE extname = 'vector'`);
    });
  }
  await cluster.asSuperuser(cluster.coordinator, database, async (c) => {
    await c.query('CREATE EXTENSION citus');
    await c.query('SELECT citus_set_coordinator_host($1, $2)', [cluster.coordinator.host, cluster.coordinator.port]);
    for (const worker of cluster.workers) await c.query('SELECT citus_add_node($1, $2)', [worker.host, worker.port]);
  });
}

/**
 * Citus follows the writes made during the copy by logical decoding with its own output plugin. This
 * machine's PostgreSQL build (15.20, Debian) allows only the plugins listed in its server-wide,
 * superuser-set `output_plugin_libraries` (pgoutput, test_decoding by default): add citus on every node.
 * A build without that setting (upstream PostgreSQL) needs nothing.
 */
async function allowCitusOutputPlugin(cluster: CitusCluster): Promise<void> {
  for (const node of [cluster.coordinator, ...cluster.workers]) {
    await cluster.asSuperuser(node, 'postgres', async (c) => {
      const { rows } = await c.query<{ setting: string }>("SELECT setting FROM pg_settings WHERE name = 'output_plugin_libraries'");
      if (!rows.length || rows[0]!.setting.split(/,\s*/).includes('citus')) return;
      // A list: each name its own value (one quoted string would be one name with commas in it).
      const names = [...rows[0]!.setting.split(/,\s*/).filter(Boolean), 'citus'];
      await c.query(`ALTER SYSTEM SET output_plugin_libraries = ${names.map((n) => pg.escapeIdentifier(n)).join(', ')}`);
      await c.query('SELECT pg_reload_conf()');
    });
  }
}

/**
 * The workers build the shards' indexes after copying their rows, within maintenance_work_mem (an HNSW
 * graph that did not fit fell back to inserting row by row; the IVFFlat indexes of migration 020 need
 * only their k-means sample). Serial builds (a parallel one reserves its whole budget as shared memory,
 * and a worker builds several shards at once).
 */
async function setWorkerMaintenanceMemory(cluster: CitusCluster, budget: string): Promise<void> {
  for (const worker of cluster.workers) {
    await cluster.asSuperuser(worker, 'postgres', async (c) => {
      await c.query(`ALTER SYSTEM SET maintenance_work_mem = ${pg.escapeLiteral(budget)}`);
      await c.query('ALTER SYSTEM SET max_parallel_maintenance_workers = 0');
      await c.query('SELECT pg_reload_conf()');
    });
  }
}

async function distributeConcurrently(
  cluster: CitusCluster,
  pool: pg.Pool,
  step: (name: string, work: () => Promise<unknown>) => Promise<void>,
) {
  await step('allow citus as a logical decoding output plugin', () => allowCitusOutputPlugin(cluster));
  const { rows: fks } = await pool.query<{ name: string; definition: string }>(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint
     WHERE conrelid = 'turns'::regclass AND contype = 'f'`,
  );
  await step('drop the foreign key of turns to sessions', () => pool.query(`ALTER TABLE turns DROP CONSTRAINT ${fks[0]!.name}`));
  await step('drop the foreign key of the feedback to turns', () =>
    pool.query(`ALTER TABLE verified_pair_feedback DROP CONSTRAINT ${FEEDBACK_TO_TURNS}`),
  );
  for (const [table, column, colocateWith] of LARGE) {
    // As 016 does: Citus copies the rows with COPY, which the table's FORCEd row-level security refuses its owner.
    await pool.query(`ALTER TABLE ${table} NO FORCE ROW LEVEL SECURITY`);
    await step(`create_distributed_table_concurrently('${table}')`, () =>
      pool.query('SELECT create_distributed_table_concurrently($1, $2, colocate_with => $3)', [table, column, colocateWith]),
    );
    await pool.query(`ALTER TABLE ${table} FORCE ROW LEVEL SECURITY`);
  }
  await step('add the foreign key back NOT VALID', () =>
    pool.query(`ALTER TABLE turns ADD CONSTRAINT ${fks[0]!.name} ${fks[0]!.definition} NOT VALID`),
  );
  await step('validate it', () => pool.query(`ALTER TABLE turns VALIDATE CONSTRAINT ${fks[0]!.name}`));
}

async function distribute(cluster: CitusCluster, database: string, mode: string, seededTurns: number): Promise<void> {
  log(`--- ${mode}, writer ${WRITERS[mode]}: ${database} (load average ${load()})`);
  let started = performance.now();
  await addCitus(cluster, database);
  log(`citus created and ${cluster.workers.length} workers added in ${seconds(performance.now() - started)}`);
  const pool = new pg.Pool({ ...cluster.coordinator, user: LOGIN, database, max: 1 });
  pool.on('error', () => {});
  const writer = await startWriter(cluster, database, WRITERS[mode]!);
  const locks = watchLocks(cluster, database);
  const step = async (name: string, work: () => Promise<unknown>) => {
    const t0 = performance.now();
    await work();
    log(`  ${name}: ${seconds(performance.now() - t0)} (load average ${load()})`);
  };
  started = performance.now();
  let error: Error | undefined;
  try {
    // Before any table is distributed: the statements routed to a shard reach the workers as these
    // roles (016 does the same, later). memorychat's functions can follow only once the tables they
    // read are distributed: Citus creates them on the workers, where the tables must exist.
    await step('the service roles may log in', () =>
      pool.query('ALTER ROLE memorychat_app LOGIN; ALTER ROLE memorychat_maintenance LOGIN'),
    );
    if (mode === 'concurrently') await distributeConcurrently(cluster, pool, step);
    // Migration 016 was applied on the single server, where it changed nothing: its file is run again by hand.
    await step("migration 016's file", async () => pool.query(await readFile(DISTRIBUTION, 'utf8')));
    await step('distribute-later-tables.sql', async () => pool.query(await readFile(LATER_TABLES, 'utf8')));
    await step('distribute-functions.sql', async () => pool.query(await readFile(FUNCTIONS, 'utf8')));
  } catch (err) {
    error = err as Error;
    log(`  failed: ${error.message}`);
  }
  const total = performance.now() - started;
  const { written, failed, longest, failing } = await writer.stop();
  const { waits, held } = await locks.stop();
  log(`  locks on turns and sessions, sampled every 100 ms: ${held.join(', ') || 'none'}`);
  log(`  statements seen waiting for a lock: ${waits.join('; ') || 'none'}`);
  log(
    `${mode}: distribution ${seconds(total)}; writer: ${written} turns written, ${failed.length} failed ` +
      `(${[...new Set(failed)].join('; ') || 'none'}), longest wait ${seconds(longest)}` +
      `${failing ? `, failures from ${failing[0].toFixed(1)} s to ${failing[1].toFixed(1)} s after the writer started` : ''}; load average ${load()}`,
  );
  await pool.end();
  // The superuser from here on: row-level security hides every row from the login that owns the tables.
  const admin = new pg.Pool({ ...cluster.coordinator, user: 'postgres', database, max: 1 });
  admin.on('error', () => {});
  const { rows: shards } = await admin.query(
    `SELECT nodeport, count(*)::int AS shards, pg_size_pretty(sum(shard_size)) AS size FROM citus_shards
     WHERE table_name = 'turns'::regclass GROUP BY nodeport ORDER BY nodeport`,
  );
  log(`turns shards per worker: ${JSON.stringify(shards)}`);
  const { rows: kinds } = await admin.query(`SELECT logicalrelid::text AS t, partmethod AS m FROM pg_dist_partition ORDER BY 1`);
  log(`tables in Citus's metadata: ${kinds.map((k) => `${k.t} (${k.m})`).join(', ')}`);
  const keysOf = (table: string) =>
    `(SELECT string_agg(conname || CASE WHEN convalidated THEN ' (valid)' ELSE ' (not valid)' END, ', ' ORDER BY conname)
      FROM pg_constraint WHERE conrelid = '${table}'::regclass AND contype = 'f')`;
  const { rows: check } = await admin.query<{ turns: string; fks: string; feedback: string }>(
    `SELECT (SELECT count(*) FROM turns) AS turns, ${keysOf('turns')} AS fks, ${keysOf('verified_pair_feedback')} AS feedback`,
  );
  log(
    `turns stored: ${check[0]!.turns} (seeded ${seededTurns} + written ${written}); foreign keys of turns: ${check[0]!.fks}; ` +
      `of verified_pair_feedback: ${check[0]!.feedback}`,
  );
  if (!error) {
    const l = load();
    const s = await measureSearch(admin, 440, 99, 'scoped');
    log(
      `per-user search on the distributed ${s.turns} turns: p50 ${s.search.p50.toFixed(2)} p95 ${s.search.p95.toFixed(2)} ` +
        `p99 ${s.search.p99.toFixed(2)} ms (load average ${l})`,
    );
  }
  await admin.end();
  if (error) throw error;
}

const cluster = await startCitusCluster();
try {
  if (args['worker-maintenance-work-mem']) await setWorkerMaintenanceMemory(cluster, args['worker-maintenance-work-mem']);
  await cluster.createLogin(LOGIN, 'LOGIN CREATEROLE');
  const [first, ...copies] = MODES.map((m) => `seeded_${m}`);
  // The single server: pgvector only, on the coordinator; every migration, 016 included (a no-op there).
  await cluster.asSuperuser(cluster.coordinator, 'postgres', (c) => c.query(`CREATE DATABASE ${first} OWNER ${LOGIN}`));
  await cluster.asSuperuser(cluster.coordinator, first!, async (c) => {
    await c.query('CREATE EXTENSION vector');
    await c.query(`UPDATE pg_extension SET extowner = '${LOGIN}'::regrole WHERE extname = 'vector'`);
  });
  const pool = new pg.Pool({ ...cluster.coordinator, user: LOGIN, database: first, max: 1 });
  pool.on('error', () => {});
  await migrate(pool);
  await pool.end();

  const admin = new pg.Pool({ ...cluster.coordinator, user: 'postgres', database: first, max: 1 });
  admin.on('error', () => {});
  let started = performance.now();
  log(`seeding ${USERS} users x ${TPU} turns (load average ${load()})`);
  const seeded = await withoutAnnIndexes(admin, () => bulkSeed(admin, { fromUser: 0, toUser: USERS, turnsPerUser: TPU, log }), log);
  await admin.query('DROP TABLE bench_templates, bench_noise');
  await admin.query('VACUUM ANALYZE sessions, turns');
  const { rows: size } = await admin.query(
    `SELECT pg_size_pretty(pg_total_relation_size('turns')) AS turns, pg_size_pretty(pg_database_size(current_database())) AS db`,
  );
  log(
    `seeded ${seeded.turns} turns of ${USERS} users (turns: ${size[0].turns}, database: ${size[0].db}) in ` +
      `${seconds(performance.now() - started)} (load average ${load()})`,
  );
  await admin.end();
  for (const copy of copies) {
    started = performance.now();
    await cluster.asSuperuser(cluster.coordinator, 'postgres', (c) => c.query(`CREATE DATABASE ${copy} TEMPLATE ${first} OWNER ${LOGIN}`));
    log(`copied into ${copy} in ${seconds(performance.now() - started)}`);
  }
  for (const mode of MODES) {
    // One way failing still leaves the other to measure; the failure is printed.
    await distribute(cluster, `seeded_${mode}`, mode, seeded.turns).catch((err: Error) => log(`${mode} failed: ${err.message}`));
  }
} finally {
  await cluster.stop();
}
