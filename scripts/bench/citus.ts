// `npm run bench -- citus`: /memoryChat on a Citus cluster (a coordinator and two workers on this
// machine, test/support/databases/citus-cluster.ts) next to the same service on the machine's single
// PostgreSQL server, in one interleaved run on the same seeded data, and the per-user search latency
// on the cluster. One machine cannot show what more hardware gives; the ratio shows what routing
// costs: each statement's scope on Citus is a transaction of its own (docs/scaling.md#row-level-security-on-citus),
// the retrieval a call delegated to the user's worker (docs/scaling.md#one-hop-per-statement).
// `--turns N` then grows both databases to N stored turns (more users, as many turns each) and measures
// search again; with it every turn is seeded by bulk-seed.ts (a vector of its own per turn), and the
// single server's seeded databases are kept as mc_bench_bulk_v3_<users>x<turns per user> and copied.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { migrate } from '../../services/db/migrate.js';
import { startCitusCluster } from '../../test/support/databases/citus-cluster.js';
import { bulkSeed, withoutAnnIndexes } from './bulk-seed.js';
import type { LoadResult } from './load.js';
import { cpuMsOf } from './rss.js';
import { measureSearchSideBySide, type SearchScale } from './scale.js';
import { ensureTemplates, seed } from './seed.js';
import {
  databaseCpuMs,
  databaseExists,
  databaseUrl,
  dropDatabase,
  postmasterCpuMs,
  recreateDatabase,
  serverVersion,
} from './server-databases.js';
import { type RunningService, serviceTurns, startService } from './service.js';
import { type CpuPerTurn, type System, sideBySide } from './side-by-side.js';
import { startInstantAnswerer } from './workload.js';

export interface CitusBenchOptions {
  users: number;
  turnsPerUser: number;
  levels: number[];
  rounds: number;
  seconds: number;
  /** Stored turns to grow both databases to after the side-by-side run, and search again at. */
  turns?: number;
  json?: string;
  log: (msg: string) => void;
}

/** The service's pool on either database: its default DATABASE_POOL_MAX. */
const POOL = 10;
const CITUS_DATABASE = 'mc_bench_citus';
/** Per run: another bench on the same server must not drop it. */
const SINGLE_COPY = `mc_bench_work_single_${process.pid}`;
const SEARCH_QUERIES = 440;

type Load = [number, number, number];

interface CitusResults {
  machine: { cpus: number; cpu?: string; memGb: number; node: string };
  single: string;
  citus: string;
  data: {
    users: number;
    turnsPerUser: number;
    turns: number;
    citusSeedSeconds: number;
    singleSeedSeconds?: number;
    grown?: { turns: number; citusSeedSeconds: number; singleSeedSeconds?: number };
  };
  loadBefore: Load;
  loadAfter: Load;
  singleServer: LoadResult[];
  cluster: LoadResult[];
  rounds: Record<string, LoadResult[][]>;
  cpuPerTurn: Record<string, CpuPerTurn[]>;
  search: { system: string; load: Load; scale: SearchScale }[];
  seconds: number;
}

const load = (): Load => loadavg().map((x) => Math.round(x * 100) / 100) as Load;

/**
 * Seeds users [fromUser, toUser) into `pool`'s migrated database: as the single-server bench does, or
 * with `--turns` by bulk-seed.ts, its approximate indexes built after the load.
 */
async function seedInto(pool: pg.Pool, opts: CitusBenchOptions, fromUser: number, toUser: number): Promise<number> {
  const { log, turnsPerUser } = opts;
  if (opts.turns) return (await withoutAnnIndexes(pool, () => bulkSeed(pool, { fromUser, toUser, turnsPerUser, log }), log)).turns;
  log(`embedding and storing ${await ensureTemplates(pool)} distinct turn texts`);
  return (await seed(pool, { fromUser, toUser, turnsPerUser, withLangchain: false, log })).turns;
}

/** The single server's copy of the seeded users [0, users): from the cache, or seeded and then cached. */
async function singleCopy(opts: CitusBenchOptions, users: number, cached: string, grownFrom?: number): Promise<number | undefined> {
  if (await databaseExists(cached)) {
    opts.log(`copying ${cached} on the single server`);
    await recreateDatabase(SINGLE_COPY, cached);
    return undefined;
  }
  if (grownFrom === undefined) {
    await recreateDatabase(SINGLE_COPY);
    const fresh = new pg.Pool({ connectionString: databaseUrl(SINGLE_COPY), max: 1 });
    await migrate(fresh);
    await fresh.end();
  }
  const single = new pg.Pool({ connectionString: databaseUrl(SINGLE_COPY), max: 1 });
  opts.log(`seeding users ${grownFrom ?? 0}..${users} on the single server`);
  const t0 = performance.now();
  await seedInto(single, opts, grownFrom ?? 0, users);
  const seconds = (performance.now() - t0) / 1000;
  await single.end();
  // Only bulk-seeded data is kept: the default path copies the cache `npm run bench -- --server` keeps.
  if (opts.turns) await recreateDatabase(cached, SINGLE_COPY);
  return seconds;
}

export async function citusBench(opts: CitusBenchOptions): Promise<void> {
  const { log } = opts;
  const started = performance.now();
  log('starting a Citus cluster (a coordinator and two workers)');
  const cluster = await startCitusCluster();
  const services: RunningService[] = [];
  let answerer: Awaited<ReturnType<typeof startInstantAnswerer>> | undefined;
  try {
    // The superuser owns the database on every node, as the single-server bench's does; the service
    // still reads and writes as memorychat_app under row-level security (migration 016 makes it a login).
    await cluster.createDatabase(CITUS_DATABASE, 'postgres');
    const citusUrl = `postgres://postgres@${cluster.coordinator.host}:${cluster.coordinator.port}/${CITUS_DATABASE}`;
    const citusPool = new pg.Pool({ connectionString: citusUrl, max: 1 });
    citusPool.on('error', () => {});
    await migrate(citusPool);
    log(`seeding ${opts.users} users x ${opts.turnsPerUser} turns into the cluster`);
    let t0 = performance.now();
    const turns = await seedInto(citusPool, opts, 0, opts.users);
    const citusSeedSeconds = (performance.now() - t0) / 1000;
    log(`seeded ${turns} turns on the cluster in ${citusSeedSeconds.toFixed(1)} s`);

    // The single server: a copy of the stage `npm run bench -- --server` keeps, or the same seed.
    const cacheOf = (users: number) => `${opts.turns ? 'mc_bench_bulk_v3' : 'mc_bench_v5'}_${users}x${opts.turnsPerUser}`;
    const singleSeedSeconds = await singleCopy(opts, opts.users, cacheOf(opts.users));

    // Both start vacuumed: the cluster's servers run autovacuum, which vacuumed its freshly seeded
    // shards during the load (about 5% of its CPU in one run, 2026-11-29, per process title), while
    // a server may run without it (this machine's does: autovacuum = off) and then never vacuums its copy.
    log('vacuuming both');
    for (const url of [citusUrl, databaseUrl(SINGLE_COPY)]) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query('VACUUM (ANALYZE)');
      await client.end();
    }

    answerer = await startInstantAnswerer();
    const home = () => mkdtemp(path.join(tmpdir(), 'memorychat-bench-service-'));
    log('starting the service on each');
    const singleService = await startService(await home(), answerer.url, {
      DATABASE_URL: databaseUrl(SINGLE_COPY),
      DATABASE_POOL_MAX: String(POOL),
    });
    services.push(singleService);
    const citusService = await startService(await home(), answerer.url, { DATABASE_URL: citusUrl, DATABASE_POOL_MAX: String(POOL) });
    services.push(citusService);

    // Database CPU: the single server's processes working in its copy and its own processes (WAL
    // writer, checkpointer, background writer; the server is the machine's, and other databases'
    // backends are not counted); the cluster's are its three servers together, all their processes.
    const singleCpu = await databaseCpuMs(SINGLE_COPY, { serverProcesses: true });
    const nodeCpu = await Promise.all(
      [cluster.coordinator, ...cluster.workers].map((node) => cluster.asSuperuser(node, 'postgres', postmasterCpuMs)),
    );
    const clusterCpu = () => nodeCpu.reduce((sum, read) => sum + read(), 0);
    const systems: System[] = [
      { name: 'single', cpu: [() => cpuMsOf(singleService.pid), singleCpu], turnFor: (c) => serviceTurns(singleService.baseUrl, c) },
      {
        name: 'citus',
        // The coordinator apart: where the cluster's CPU goes (the rest is the two workers').
        cpu: [() => cpuMsOf(citusService.pid), clusterCpu, nodeCpu[0]!],
        turnFor: (c) => serviceTurns(citusService.baseUrl, c),
      },
    ];
    const loadBefore = load();
    const { combined, rounds, cpuPerTurn } = await sideBySide(systems, opts.users, opts);
    const loadAfter = load();
    for (const s of services.splice(0)) await s.stop();

    const search: CitusResults['search'] = [];
    // Interleaved, search by search: the machine is shared, and its load moves within a measurement.
    const measureBoth = async () => {
      const singlePool = new pg.Pool({ connectionString: databaseUrl(SINGLE_COPY), max: 1 });
      const l = load();
      const scales = await measureSearchSideBySide({ citus: citusPool, single: singlePool }, SEARCH_QUERIES, 99, 'scoped');
      for (const [system, scale] of Object.entries(scales)) {
        log(
          `search on ${system} @ ${scale.turns} turns: p50 ${scale.search.p50.toFixed(2)} p95 ${scale.search.p95.toFixed(2)} ms (load ${l.join(' ')})`,
        );
        search.push({ system, load: l, scale });
      }
      await singlePool.end();
    };
    await measureBoth();
    let grown: CitusResults['data']['grown'];
    if (opts.turns && opts.turns > turns) {
      const users = Math.ceil(opts.turns / opts.turnsPerUser);
      log(`growing both to ${users} users x ${opts.turnsPerUser} turns`);
      t0 = performance.now();
      const added = await seedInto(citusPool, opts, opts.users, users);
      const citusGrowSeconds = (performance.now() - t0) / 1000;
      log(`seeded ${added} more turns on the cluster in ${citusGrowSeconds.toFixed(1)} s`);
      const singleGrowSeconds = await singleCopy(opts, users, cacheOf(users), opts.users);
      grown = {
        turns: turns + added,
        citusSeedSeconds: citusGrowSeconds,
        ...(singleGrowSeconds ? { singleSeedSeconds: singleGrowSeconds } : {}),
      };
      await measureBoth();
    }
    await citusPool.end();

    const citusVersion = await cluster.asSuperuser(
      cluster.coordinator,
      CITUS_DATABASE,
      async (c) => (await c.query<{ v: string }>("SELECT extversion AS v FROM pg_extension WHERE extname = 'citus'")).rows[0]!.v,
    );
    const results: CitusResults = {
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memGb: totalmem() / 2 ** 30, node: process.version },
      single: `${await serverVersion()}, one server`,
      citus: `Citus ${citusVersion}: a coordinator and 2 workers on this machine, 8 shards per table`,
      data: {
        users: opts.users,
        turnsPerUser: opts.turnsPerUser,
        turns,
        citusSeedSeconds,
        ...(singleSeedSeconds ? { singleSeedSeconds } : {}),
        ...(grown ? { grown } : {}),
      },
      loadBefore,
      loadAfter,
      singleServer: combined.get('single')!,
      cluster: combined.get('citus')!,
      rounds: Object.fromEntries(rounds),
      cpuPerTurn: Object.fromEntries(cpuPerTurn),
      search,
      seconds: (performance.now() - started) / 1000,
    };
    if (opts.json) await writeFile(opts.json, JSON.stringify(results, null, 2));
    console.log(report(results, opts));
  } finally {
    for (const s of services) await s.stop();
    answerer?.server.close();
    await dropDatabase(SINGLE_COPY).catch(() => {});
    await cluster.stop();
  }
}

function report(r: CitusResults, opts: CitusBenchOptions): string {
  const f = (n: number | undefined, d = 1) => (n === undefined || !Number.isFinite(n) ? '–' : n.toFixed(d));
  const lines: string[] = [];
  lines.push(`machine: ${r.machine.cpus} cores (${r.machine.cpu}), ${f(r.machine.memGb)} GiB, Node ${r.machine.node}`);
  lines.push(`single: ${r.single}`);
  lines.push(`citus: ${r.citus}`);
  lines.push(`load average (1, 5, 15 min): ${r.loadBefore.join(' ')} before the load, ${r.loadAfter.join(' ')} after`);
  lines.push(`method: ${opts.rounds} rounds x ${opts.seconds} s slices per system and concurrency, systems alternating within each round`);
  lines.push(
    `data: ${r.data.turns} stored turns over ${r.data.users} users in each (cluster seeded in ${f(r.data.citusSeedSeconds, 0)} s` +
      `${r.data.singleSeedSeconds ? `, single server in ${f(r.data.singleSeedSeconds, 0)} s` : ''}); run took ${f(r.seconds, 0)} s`,
  );
  const g = r.data.grown;
  if (g) {
    lines.push(
      `grown to ${g.turns} stored turns for the second search measurement (cluster seeded in ${f(g.citusSeedSeconds, 0)} s` +
        `${g.singleSeedSeconds ? `, single server in ${f(g.singleSeedSeconds, 0)} s` : ', single server copied from its cache'}); ` +
        'every turn seeded by bulk-seed.ts (a vector of its own)',
    );
  }
  lines.push('');
  lines.push('| /memoryChat on | clients | p50 ms | p95 ms | p99 ms | turns/s | measured turns |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [name, xs] of [
    ['single server', r.singleServer],
    ['Citus coordinator', r.cluster],
  ] as const) {
    for (const x of xs) {
      lines.push(
        `| ${name} | ${x.clients} | ${f(x.p50)} | ${f(x.p95)} | ${f(x.p99)} | ${f(x.rps, 0)} | ${x.requests}${x.errors ? ` (${x.errors} errors: ${x.firstError})` : ''} |`,
      );
    }
  }
  lines.push('');
  lines.push(`| Citus ÷ single server | ${opts.levels.map((c) => `${c} client${c > 1 ? 's' : ''}`).join(' | ')} |`);
  lines.push(`| --- | ${opts.levels.map(() => '---:').join(' | ')} |`);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ratio = (name: string, fn: (i: number) => number) =>
    lines.push(`| ${name} | ${opts.levels.map((_, i) => f(fn(i), 2)).join(' | ')} |`);
  ratio('throughput', (i) => r.cluster[i]!.rps / r.singleServer[i]!.rps);
  ratio('throughput, median of rounds', (i) => median(r.rounds.citus![i]!.map((x, k) => x.rps / r.rounds.single![i]![k]!.rps)));
  ratio('p50 latency', (i) => r.cluster[i]!.p50 / r.singleServer[i]!.p50);
  ratio('p95 latency', (i) => r.cluster[i]!.p95 / r.singleServer[i]!.p95);
  ratio('database CPU per turn', (i) => r.cpuPerTurn.citus![i]!.db / r.cpuPerTurn.single![i]!.db);
  // The first measurement of each (at the seeded size): the search ratio of the targets.
  const searchOf = (system: string) => r.search.find((x) => x.system === system)?.scale.search.p50 ?? Number.NaN;
  lines.push(
    `| per-user search p50 (one client) | ${f(searchOf('citus') / searchOf('single'), 2)} |${' |'.repeat(opts.levels.length - 1)}`,
  );
  lines.push('');
  lines.push(
    "CPU per turn (ms; app = the service process; db = the single server's processes in the bench's database and its own (WAL writer, checkpointer, background writer), or every process of all three Citus servers; both vacuumed before the load):",
  );
  lines.push('');
  lines.push(`| on | ${opts.levels.map((c) => `app @${c}`).join(' | ')} | ${opts.levels.map((c) => `db @${c}`).join(' | ')} |`);
  lines.push(`| --- | ${opts.levels.map(() => '---:').join(' | ')} | ${opts.levels.map(() => '---:').join(' | ')} |`);
  for (const [name, xs] of Object.entries(r.cpuPerTurn)) {
    lines.push(`| ${name} | ${xs.map((x) => f(x.app, 2)).join(' | ')} | ${xs.map((x) => f(x.db, 2)).join(' | ')} |`);
  }
  const coordinator = r.cpuPerTurn.citus?.map((x) => x.parts?.[0]);
  if (coordinator?.every((ms) => ms !== undefined)) {
    const of = (i: number) => `${f(coordinator[i], 2)} (${f((100 * coordinator[i]!) / r.cpuPerTurn.citus![i]!.db, 0)}%)`;
    lines.push(`| citus: coordinator | ${opts.levels.map(() => '').join(' | ')} | ${opts.levels.map((_, i) => of(i)).join(' | ')} |`);
    lines.push(
      `| citus: workers | ${opts.levels.map(() => '').join(' | ')} | ${opts.levels.map((_, i) => f(r.cpuPerTurn.citus![i]!.db - coordinator[i]!, 2)).join(' | ')} |`,
    );
  }
  lines.push('');
  lines.push(
    "Per-user retrieval (session + window + top-3 search, one statement, one client), as the service sends it (in the caller's scope; " +
      "on Citus as a call delegated to the worker holding the user's shards), the two interleaved search by search:",
  );
  lines.push('');
  lines.push('| on | stored turns | users | p50 ms | p95 ms | p99 ms | hits/search | load average |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const { system, load: l, scale: s } of r.search) {
    lines.push(
      `| ${system} | ${s.turns} | ${s.users} | ${f(s.search.p50, 2)} | ${f(s.search.p95, 2)} | ${f(s.search.p99, 2)} | ` +
        `${f(s.hits, 2)} | ${l.join(' ')} |`,
    );
  }
  return lines.join('\n');
}
