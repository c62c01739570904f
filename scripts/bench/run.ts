// `npm run bench` / `npm run bench:scale`: memory overhead of /memoryChat vs the SQL floor vs a
// LangChain JS peer, search latency against stored volume, and RSS, in ONE run on the same seeded
// embedded database. Options (all optional):
//   --users N            users in the main database (default 1000; 100 turns each -> 100k turns)
//   --turns-per-user N   (default 100)
//   --seconds S          measured seconds per slice (default 2)
//   --rounds R           slices per system and concurrency, alternating systems (default 4)
//   --clients 1,10,50    concurrency levels
//   --scale              also build and measure 1M stored turns (bench:scale)
//   --fresh              reseed instead of reusing the cached seeded directories
//   --json FILE          also write every number as JSON
// Seeded directories are cached under $BENCH_CACHE (default: <tmpdir>/memorychat-bench) and copied
// for each phase, so every phase starts from the same state and the cache stays pristine.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import type { Database } from '../../db/pool.js';
import { scopedDatabase } from '../../db/row-security.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { answerFor, turnEmbeddingText, userId } from './data.js';
import { copyDataDir, openBenchDatabase } from './database.js';
import { floorTurns, shortVectors, unpreparedStatements } from './floor.js';
import { addLangchainIndexes, createLangchainTables, dropLangchainIndexes, langchainTurn, vectorStore } from './langchain-peer.js';
import { combine, type LoadResult, runLoad } from './load.js';
import { childrenOf, commandLineIncludes, cpuMsOf, type Memory, memoryOf, RssSampler } from './rss.js';
import { measureSearch, type SearchScale } from './scale.js';
import { ensureTemplates, seed } from './seed.js';
import { serviceTurns, startService } from './service.js';
import { conversationClient, startInstantAnswerer, type TurnFn } from './workload.js';

const { values: args } = parseArgs({
  options: {
    users: { type: 'string', default: '1000' },
    'turns-per-user': { type: 'string', default: '100' },
    seconds: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '4' },
    clients: { type: 'string', default: '1,10,50' },
    scale: { type: 'boolean', default: false },
    fresh: { type: 'boolean', default: false },
    json: { type: 'string' },
    'skip-langchain': { type: 'boolean', default: false },
  },
});
const USERS = Number(args.users);
const TPU = Number(args['turns-per-user']);
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const LEVELS = args.clients!.split(',').map(Number);
const CACHE = process.env.BENCH_CACHE ?? path.join(tmpdir(), 'memorychat-bench');
const WORK = path.join(CACHE, 'work');
const LOAD = (clients: number) => ({ clients, warmupMs: 1500, durationMs: SECONDS * 1000, maxRequests: 100_000 });
const log = (msg: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** Stages: stored volume grows by adding users with the same number of turns each. */
const stages = [
  { name: '10k', users: Math.max(1, Math.round(USERS / 10)), langchain: true },
  { name: 'main', users: USERS, langchain: true },
  ...(args.scale ? [{ name: '1M', users: USERS * 10, langchain: false }] : []),
];

interface Manifest {
  users: number;
  turnsPerUser: number;
  turns: number;
  seedMs: number;
}

async function stageDir(i: number): Promise<{ dir: string; manifest: Manifest }> {
  const stage = stages[i]!;
  const dir = path.join(CACHE, `v1-${stage.users}x${TPU}`);
  const manifestFile = path.join(dir, 'bench-manifest.json');
  if (!args.fresh) {
    try {
      return { dir, manifest: JSON.parse(await readFile(manifestFile, 'utf8')) as Manifest };
    } catch {
      // not seeded yet
    }
  }
  const previous = i > 0 ? await stageDir(i - 1) : undefined;
  await rm(dir, { recursive: true, force: true });
  if (previous) await copyDataDir(previous.dir, dir);
  await rm(manifestFile, { force: true });
  const db = await openBenchDatabase(dir, true);
  const started = performance.now();
  if (!previous) {
    await createLangchainTables(db.pool);
    log(`embedding and storing ${await ensureTemplates(db.pool)} distinct turn texts`);
  }
  const from = previous?.manifest.users ?? 0;
  log(`seeding users ${from}..${stage.users} x ${TPU} turns into ${dir}`);
  const r = await seed(db.pool, { fromUser: from, toUser: stage.users, turnsPerUser: TPU, withLangchain: stage.langchain, log });
  await db.close();
  const manifest: Manifest = {
    users: stage.users,
    turnsPerUser: TPU,
    turns: (previous?.manifest.turns ?? 0) + r.turns,
    seedMs: (previous?.manifest.seedMs ?? 0) + (performance.now() - started),
  };
  log(`seeded ${r.turns} turns in ${(r.ms / 1000).toFixed(1)} s (${Math.round(r.turns / (r.ms / 1000))} turns/s)`);
  await writeFile(manifestFile, JSON.stringify(manifest));
  return { dir, manifest };
}

interface System {
  name: string;
  /** Processes whose CPU time is charged to this system's turns: [app process, database process]. */
  pids: [number, number];
  turnFor(clients: number): { turn: TurnFn; close?: () => Promise<void> };
}

/**
 * Side by side: for each concurrency, every system runs a short slice in turn, ROUNDS times, so
 * that the shared machine's noise falls on all of them alike. Clients keep their conversations
 * across slices. Returns, per system, one combined result per level and the per-round results.
 */
async function sideBySide(systems: System[], users: number) {
  const combined = new Map<string, LoadResult[]>(systems.map((s) => [s.name, []]));
  const rounds = new Map<string, LoadResult[][]>(systems.map((s) => [s.name, []]));
  const cpuPerTurn = new Map<string, { app: number; db: number }[]>(systems.map((s) => [s.name, []]));
  // Warm every system first (the embedded database's WebAssembly tiers up, caches fill): 4 s at 10 clients.
  for (const s of systems) {
    const { turn, close } = s.turnFor(10);
    await runLoad({ clients: 10, warmupMs: 0, durationMs: 4000, maxRequests: 1e6 }, (i) => conversationClient(90_000 + i, users, turn));
    await close?.();
  }
  log('warmed up');
  for (const clients of LEVELS) {
    const made = systems.map((s) => {
      const { turn, close } = s.turnFor(clients);
      return { s, close, fns: Array.from({ length: clients }, (_, i) => conversationClient(10_000 + i, users, turn)) };
    });
    const slices = new Map<string, LoadResult[]>(systems.map((s) => [s.name, []]));
    const cpu = new Map<string, { app: number; db: number; turns: number }>(systems.map((s) => [s.name, { app: 0, db: 0, turns: 0 }]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const m of round % 2 ? [...made].reverse() : made) {
        const before = m.s.pids.map(cpuMsOf);
        const r = await runLoad({ ...LOAD(clients), warmupMs: round === 0 ? 1500 : 300 }, (i) => m.fns[i]!);
        const after = m.s.pids.map(cpuMsOf);
        const c = cpu.get(m.s.name)!;
        // Includes the warm-up turns: CPU per turn is charged over every turn of the slice.
        c.app += after[0]! - before[0]!;
        c.db += after[1]! - before[1]!;
        c.turns += r.requests + Math.round(r.rps * (round === 0 ? 1.5 : 0.3));
        slices.get(m.s.name)!.push(r);
      }
    }
    for (const [name, c] of cpu) cpuPerTurn.get(name)!.push({ app: c.app / c.turns, db: c.db / c.turns });
    for (const m of made) {
      await m.close?.();
      const r = combine(slices.get(m.s.name)!);
      combined.get(m.s.name)!.push(r);
      rounds.get(m.s.name)!.push(slices.get(m.s.name)!.map(({ latencies: _, ...x }) => x));
      log(
        `${m.s.name} c=${clients}: ${r.rps.toFixed(0)}/s p50 ${r.p50.toFixed(1)} p95 ${r.p95.toFixed(1)} p99 ${r.p99.toFixed(1)} ms` +
          (r.errors ? ` errors ${r.errors} (${r.firstError})` : ''),
      );
    }
  }
  return { combined, rounds, cpuPerTurn };
}

async function main() {
  const started = performance.now();
  await mkdir(CACHE, { recursive: true });
  const built = [];
  for (let i = 0; i < stages.length; i++) built.push(await stageDir(i));
  const main = built[1]!;
  const answerer = await startInstantAnswerer();

  // Three copies of the same seeded database, each in its own embedded Postgres with one connection:
  // the service's, the floor's (and LangChain as shipped), LangChain with indexes.
  const dirs = { service: path.join(WORK, 'service'), floor: path.join(WORK, 'floor'), lc: path.join(WORK, 'lc') };
  for (const dir of Object.values(dirs)) await copyDataDir(main.dir, dir);
  log('starting the service');
  const service = await startService(dirs.service, answerer.url);
  await new Promise((r) => setTimeout(r, 2000));
  const idle = { service: memoryOf(service.pid), db: memoryOf(service.dbPid) };
  // One request warms the code paths before the idle figures are read again.
  const warm = serviceTurns(service.baseUrl, 1);
  await warm.turn({ user: 0, database: 'concert_singer', question: 'How many singers are there?', sql: 'SELECT count(*) FROM singer' });
  await warm.close();
  const idleWarm = { service: memoryOf(service.pid), db: memoryOf(service.dbPid) };

  const dbPid = async (open: () => Promise<Database>): Promise<[Database, number]> => {
    const before = new Set(childrenOf(process.pid));
    const db = await open();
    const pid = childrenOf(process.pid).find((p) => !before.has(p) && commandLineIncludes(p, 'pglite-process'));
    return [db, pid ?? -1];
  };
  const [floorDb, floorPid] = await dbPid(() => openBenchDatabase(dirs.floor));
  const [lcDb, lcPid] = args['skip-langchain'] ? [undefined, -1] : await dbPid(() => openBenchDatabase(dirs.lc));
  if (lcDb) {
    await dropLangchainIndexes(floorDb.pool);
    await addLangchainIndexes(lcDb.pool);
  }
  const lcTurn = (db: Database): TurnFn => {
    const store = vectorStore(db.pool);
    return async (t) => {
      const sessionId = t.sessionId ?? crypto.randomUUID();
      await langchainTurn(db.pool, store, {
        userId: userId(t.user),
        sessionId,
        question: t.question,
        windowTurns: 10,
        k: 3,
        minSimilarity: 0.25,
        // The same instant answerer, over HTTP, as the service calls.
        answer: async (question) => {
          const res = await request(answerer.url, { method: 'POST', body: JSON.stringify({ question, bench_sql: t.sql }) });
          return (await res.body.json()) as ReturnType<typeof answerFor>;
        },
      });
      return sessionId;
    };
  };
  const systems: System[] = [
    { name: 'service', pids: [service.pid, service.dbPid], turnFor: (c) => serviceTurns(service.baseUrl, c) },
    { name: 'floor', pids: [process.pid, floorPid], turnFor: () => ({ turn: floorTurns(() => floorDb.pool) }) },
    { name: 'floorPlain', pids: [process.pid, floorPid], turnFor: () => ({ turn: floorTurns(() => unpreparedStatements(floorDb.pool)) }) },
    { name: 'floorLean', pids: [process.pid, floorPid], turnFor: () => ({ turn: floorTurns(() => shortVectors(floorDb.pool)) }) },
    {
      name: 'floorScoped',
      pids: [process.pid, floorPid],
      turnFor: () => ({ turn: floorTurns((who) => scopedDatabase(floorDb.pool).asUser(who)) }),
    },
    ...(lcDb
      ? [
          { name: 'langchainShipped', pids: [process.pid, floorPid] as [number, number], turnFor: () => ({ turn: lcTurn(floorDb) }) },
          { name: 'langchainIndexed', pids: [process.pid, lcPid] as [number, number], turnFor: () => ({ turn: lcTurn(lcDb) }) },
        ]
      : []),
  ];
  const sampler = new RssSampler([service.pid, service.dbPid]);
  const { combined, rounds, cpuPerTurn } = await sideBySide(systems, main.manifest.users);
  sampler.stop();
  const loaded = {
    service: memoryOf(service.pid),
    db: memoryOf(service.dbPid),
    maxService: sampler.max.get(service.pid),
    maxDb: sampler.max.get(service.dbPid),
  };
  await service.stop();
  await floorDb.close();
  await lcDb?.close();

  // Embedding cost inside every turn (question + turn text), for reference.
  const t0 = performance.now();
  for (let i = 0; i < 2000; i++) {
    const q = `How many singers are older than ${i}?`;
    const a = answerFor(q, 'SELECT count(*) FROM singer WHERE age > 30');
    embedText(q, 384);
    embedText(turnEmbeddingText(q, a), 384);
  }
  const embedMs = (performance.now() - t0) / 2000;

  // --- d: search against stored volume ---
  const scale: SearchScale[] = [];
  // Read-only, so each stage's cached directory is opened in place (no copy of up to ~10 GB).
  for (const stage of built) {
    const sdb = await openBenchDatabase(stage.dir);
    const s = await measureSearch(sdb.pool, 440);
    await sdb.close();
    log(
      `search @ ${s.turns} turns: p50 ${s.search.p50.toFixed(2)} p95 ${s.search.p95.toFixed(2)} ms; as plain queries p50 ${s.plain.p50.toFixed(2)} p95 ${s.plain.p95.toFixed(2)} ms`,
    );
    scale.push(s);
  }
  answerer.server.close();
  await rm(WORK, { recursive: true, force: true });

  const results: Results = {
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memGb: totalmem() / 2 ** 30, node: process.version, load: loadavg() },
    data: main.manifest,
    service: combined.get('service')!,
    floor: combined.get('floor')!,
    floorPlain: combined.get('floorPlain')!,
    floorLean: combined.get('floorLean')!,
    floorScoped: combined.get('floorScoped')!,
    langchainShipped: combined.get('langchainShipped') ?? [],
    langchainIndexed: combined.get('langchainIndexed') ?? [],
    rounds: Object.fromEntries(rounds),
    cpuPerTurn: Object.fromEntries(cpuPerTurn),
    embedMsPerTurn: embedMs,
    scale,
    rss: { idle, idleWarm, loaded },
    seconds: (performance.now() - started) / 1000,
  };
  if (args.json) await writeFile(args.json, JSON.stringify(results, null, 2));
  console.log(report(results));
}

type Results = {
  machine: { cpus: number; cpu?: string; memGb: number; node: string; load: number[] };
  data: Manifest;
  service: LoadResult[];
  floor: LoadResult[];
  floorPlain: LoadResult[];
  floorLean: LoadResult[];
  floorScoped: LoadResult[];
  langchainShipped: LoadResult[];
  langchainIndexed: LoadResult[];
  rounds: Record<string, LoadResult[][]>;
  cpuPerTurn: Record<string, { app: number; db: number }[]>;
  embedMsPerTurn: number;
  scale: SearchScale[];
  rss: {
    idle: { service?: Memory; db?: Memory };
    idleWarm: { service?: Memory; db?: Memory };
    loaded: { service?: Memory; db?: Memory; maxService?: number; maxDb?: number };
  };
  seconds: number;
};

function report(r: Results): string {
  const f = (n: number | undefined, d = 1) => (n === undefined || !Number.isFinite(n) ? '–' : n.toFixed(d));
  const row = (name: string, x: LoadResult | undefined) =>
    x
      ? `| ${name} | ${x.clients} | ${f(x.p50)} | ${f(x.p95)} | ${f(x.p99)} | ${f(x.rps, 0)} | ${x.requests}${x.errors ? ` (${x.errors} errors)` : ''} |`
      : '';
  const lines: string[] = [];
  lines.push(
    `machine: ${r.machine.cpus} cores (${r.machine.cpu}), ${f(r.machine.memGb)} GiB, Node ${r.machine.node}; load average at the end ${r.machine.load.map((x) => f(x, 2)).join(' ')}`,
  );
  lines.push(`method: ${ROUNDS} rounds x ${SECONDS} s slices per system and concurrency, systems alternating within each round`);
  lines.push(
    `data: ${r.data.turns} stored turns over ${r.data.users} users (seeded in ${f(r.data.seedMs / 1000)} s); run took ${f(r.seconds, 0)} s`,
  );
  lines.push('');
  lines.push('| flow | clients | p50 ms | p95 ms | p99 ms | turns/s | measured turns |');
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  const groups: [string, LoadResult[]][] = [
    ['a. /memoryChat (HTTP, JWT, instant answerer)', r.service],
    ['b. floor: same SQL with pg (2 round trips)', r.floor],
    ["b'. floor before prepared statements (plain queries)", r.floorPlain],
    ["b''. floor + float4-precision vector text", r.floorLean],
    ["b'''. floor under row-level security (each statement in a scoped transaction)", r.floorScoped],
    ['c. LangChain JS as shipped', r.langchainShipped],
    ["c'. LangChain JS + 2 indexes", r.langchainIndexed],
  ];
  for (const [name, xs] of groups) for (const x of xs) lines.push(row(name, x));
  lines.push('');
  lines.push(`| ratio | ${LEVELS.map((c) => `${c} client${c > 1 ? 's' : ''}`).join(' | ')} | target |`);
  lines.push(`| --- | ${LEVELS.map(() => '---:').join(' | ')} | --- |`);
  const at = (xs: LoadResult[], i: number) => xs[i];
  const ratio = (name: string, fn: (i: number) => number | undefined, target: string) =>
    lines.push(`| ${name} | ${LEVELS.map((_, i) => f(fn(i), 2)).join(' | ')} | ${target} |`);
  ratio('overhead ÷ floor, p50 latency', (i) => at(r.service, i)!.p50 / at(r.floor, i)!.p50, '≤ 1.25 (1 client)');
  ratio('overhead ÷ floor, p95 latency', (i) => at(r.service, i)!.p95 / at(r.floor, i)!.p95, '');
  ratio('service ÷ floor, throughput', (i) => at(r.service, i)!.rps / at(r.floor, i)!.rps, '≥ 0.85 (10, 50)');
  if (r.langchainShipped.length) {
    ratio('service ÷ LangChain as shipped, throughput', (i) => at(r.service, i)!.rps / at(r.langchainShipped, i)!.rps, '≥ 8');
    ratio('service ÷ LangChain + indexes, throughput', (i) => at(r.service, i)!.rps / at(r.langchainIndexed, i)!.rps, '≥ 1.5');
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const perRound = (a: string, b: string) => (i: number) =>
    r.rounds[a] && r.rounds[b] ? median(r.rounds[a]![i]!.map((x, k) => x.rps / r.rounds[b]![i]![k]!.rps)) : undefined;
  ratio('service ÷ floor, throughput, median of rounds', perRound('service', 'floor'), '≥ 0.85 (10, 50)');
  if (r.langchainShipped.length) {
    ratio('service ÷ LangChain as shipped, median of rounds', perRound('service', 'langchainShipped'), '≥ 8');
    ratio('service ÷ LangChain + indexes, median of rounds', perRound('service', 'langchainIndexed'), '≥ 1.5');
  }
  ratio(
    'floor before prepared statements ÷ floor, p50',
    (i) => at(r.floorPlain, i)!.p50 / at(r.floor, i)!.p50,
    '(> 1: preparing made it faster)',
  );
  ratio('floor ÷ floor before prepared statements, throughput, median of rounds', perRound('floor', 'floorPlain'), '');
  ratio('floor + float4 vectors ÷ floor, throughput, median of rounds', perRound('floorLean', 'floor'), '');
  ratio('floor under row-level security ÷ floor, p50', (i) => at(r.floorScoped, i)!.p50 / at(r.floor, i)!.p50, '(the cost of RLS)');
  ratio('floor under row-level security ÷ floor, throughput, median of rounds', perRound('floorScoped', 'floor'), '');
  lines.push('');
  lines.push('CPU per turn (ms; app = service process, or the bench process for in-process flows, which also runs the load');
  lines.push('driver and the instant answerer; db = the embedded Postgres process, single-threaded: its CPU per turn bounds throughput):');
  lines.push('');
  lines.push(`| flow | ${LEVELS.map((c) => `app @${c}`).join(' | ')} | ${LEVELS.map((c) => `db @${c}`).join(' | ')} |`);
  lines.push(`| --- | ${LEVELS.map(() => '---:').join(' | ')} | ${LEVELS.map(() => '---:').join(' | ')} |`);
  for (const [name, xs] of Object.entries(r.cpuPerTurn)) {
    lines.push(`| ${name} | ${xs.map((x) => f(x.app, 2)).join(' | ')} | ${xs.map((x) => f(x.db, 2)).join(' | ')} |`);
  }
  lines.push('');
  lines.push(`local embedder inside each turn (question + turn text): ${f(r.embedMsPerTurn, 2)} ms`);
  lines.push('');
  lines.push(
    'Per-user retrieval (session + window + top-3 search, one statement, one client), prepared (as shipped) and as plain queries:',
  );
  lines.push('');
  lines.push('| stored turns | users | turns/user | p50 ms | p95 ms | p99 ms | plain p50 ms | plain p95 ms | plain p99 ms | hits/search |');
  lines.push('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of r.scale) {
    lines.push(
      `| ${s.turns} | ${s.users} | ${f(s.turnsPerUser, 0)} | ${f(s.search.p50, 2)} | ${f(s.search.p95, 2)} | ${f(s.search.p99, 2)} | ` +
        `${f(s.plain.p50, 2)} | ${f(s.plain.p95, 2)} | ${f(s.plain.p99, 2)} | ${f(s.hits, 2)} |`,
    );
  }
  lines.push('');
  const m = (x?: Memory) => (x ? `${f(x.rssMb, 0)} MB (peak ${f(x.hwmMb, 0)})` : '–');
  lines.push('| RSS | service process | embedded Postgres process |');
  lines.push('| --- | ---: | ---: |');
  lines.push(`| idle, after start | ${m(r.rss.idle.service)} | ${m(r.rss.idle.db)} |`);
  lines.push(`| idle, after one request | ${m(r.rss.idleWarm.service)} | ${m(r.rss.idleWarm.db)} |`);
  lines.push(`| after load (peak = VmHWM) | ${m(r.rss.loaded.service)} | ${m(r.rss.loaded.db)} |`);
  lines.push(`| max VmRSS sampled under load | ${f(r.rss.loaded.maxService, 0)} MB | ${f(r.rss.loaded.maxDb, 0)} MB |`);
  return lines.join('\n');
}

await main();
