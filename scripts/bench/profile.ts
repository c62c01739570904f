// `npm run bench -- profile [--clients N] [--seconds S] [--warmup S] [--data DIR | --server] [--perf] [--env K=V,...]`:
// runs the service with --cpu-prof on a copy of a seeded directory (or, with --server, of the seeded
// server database `npm run bench -- --server` left, with a pool of 10), drives /memoryChat, and prints
// where the service process spends its CPU (self time by function, by package and by area:
// profile-areas.ts). With --perf, Linux perf samples it instead and only the areas are printed
// (perf-areas.ts says why they are the truer split); --peer --perf profiles the fair peer
// (langchain-server.ts) the same way, on its own copy with LangChain's indexes. --env runs the service
// with settings of its own (MEMORY_PII=off,MEMORY_SEMANTIC_SEARCH_K=0): what a feature costs per turn.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { copyDataDir, openBenchDatabase } from './database.js';
import { addLangchainIndexes } from './langchain-peer.js';
import { runLoad } from './load.js';
import { perfCpu, recordPerf } from './perf-areas.js';
import { type ProfileNode, selfTimeByArea } from './profile-areas.js';
import { cpuMsOf } from './rss.js';
import { databaseUrl, dropDatabase, openServerDatabase, recreateDatabase } from './server-databases.js';
import { serviceEnvFrom, serviceTurns, startServedPeer, startService } from './service.js';
import { conversationClient, startInstantAnswerer } from './workload.js';

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '20' },
    data: { type: 'string', default: path.join(process.env.BENCH_CACHE ?? path.join(tmpdir(), 'memorychat-bench'), 'v5-1000x100') },
    users: { type: 'string', default: '1000' },
    top: { type: 'string', default: '25' },
    server: { type: 'boolean', default: false },
    perf: { type: 'boolean', default: false },
    peer: { type: 'boolean', default: false },
    env: { type: 'string', default: '' },
  },
});
const serviceEnv = serviceEnvFrom(args.env, '--env');
if (args.peer && args.env) throw new Error("--env sets the service's settings: not with --peer");

type Node = ProfileNode;

/** The service runs from this checkout's dist/ (service.ts), so its frames' urls start here. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const profDir = await mkdtemp(path.join(tmpdir(), 'memorychat-prof-'));
const dataDir = path.join(profDir, 'data');
// One copy per run: profiles run side by side (before and after builds, other helpers) never share it.
// BENCH_DB_PREFIX as in run.ts: the seeded stage that `memory-chat --server` left under the same prefix.
const DB_PREFIX = process.env.BENCH_DB_PREFIX ?? 'mc_bench';
const serverCopy = `${DB_PREFIX}_profile_${process.pid}`;
if (args.server) await recreateDatabase(serverCopy, `${DB_PREFIX}_v5_${args.users}x100`);
else await copyDataDir(args.data!, dataDir);
const answerer = await startInstantAnswerer();
if (args.peer && !args.perf) throw new Error('--peer is profiled with perf only: add --perf');
if (args.peer) {
  const db = args.server ? await openServerDatabase(serverCopy, 1) : await openBenchDatabase(dataDir);
  await addLangchainIndexes(db.pool);
  await db.close();
}
if (!args.perf) process.env.BENCH_CPU_PROF = profDir;
// Names the JIT-compiled frames for perf (/tmp/perf-PID.map).
const perfEnv: Record<string, string> = args.perf ? { NODE_OPTIONS: '--perf-basic-prof' } : {};
const service = args.peer
  ? await startServedPeer(answerer.url, args.server ? { databaseUrl: databaseUrl(serverCopy) } : { dataDir }, perfEnv)
  : await startService(dataDir, answerer.url, {
      ...(args.server ? { DATABASE_URL: databaseUrl(serverCopy), DATABASE_POOL_MAX: '10' } : {}),
      ...perfEnv,
      ...serviceEnv,
    });
const clients = Number(args.clients);
const { turn, close } = serviceTurns(service.baseUrl, clients);
// The profile covers the service's whole life; only the measured slice counts (start-up, module
// loading and the warm-up are not per-turn work). V8 stamps samples with the same monotonic clock as
// process.hrtime, in microseconds.
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
// V8 was still optimising on its compiler threads 10 s into a run (17% of the process's samples; 1% after 30 s).
const WARMUP_MS = Number(args.warmup) * 1000;
const measuredFrom = monotonicUs() + WARMUP_MS * 1000;
// The process's CPU time over the same slice: on a busy machine the sampler's wall-clock deltas also
// count time the process waited for a core, so the per-area table splits this measured CPU by the
// profile's shares instead of trusting the deltas' sum.
let cpuFrom = NaN;
const perfFile = path.join(profDir, 'perf.data');
let recorded: Promise<void> = Promise.resolve();
setTimeout(() => {
  cpuFrom = cpuMsOf(service.pid);
  if (args.perf) recorded = recordPerf(service.pid, Number(args.seconds), perfFile);
}, WARMUP_MS);
const r = await runLoad({ clients, warmupMs: WARMUP_MS, durationMs: Number(args.seconds) * 1000, maxRequests: 1e6 }, (i) =>
  conversationClient(20_000 + i, Number(args.users), turn),
);
const measuredTo = monotonicUs();
const cpuPerTurnMs = (cpuMsOf(service.pid) - cpuFrom) / Math.max(1, r.requests);
await recorded;
await close();
await service.stop();
answerer.server.close();
if (args.server) await dropDatabase(serverCopy);
console.log(
  `${args.env ? `${args.env}: ` : ''}c=${clients}: ${r.rps.toFixed(0)}/s p50 ${r.p50.toFixed(2)} p95 ${r.p95.toFixed(2)} ms (${r.requests} requests)`,
);

if (args.perf) {
  const script = execFileSync('perf', ['script', '-i', perfFile], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  const { byArea: areas, byFunction } = perfCpu(script, service.pid, ROOT);
  const sampled = [...areas.values()].reduce((sum, t) => sum + t, 0);
  const rows = [...areas.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([area, t]) => `${((100 * t) / sampled).toFixed(1).padStart(5)}%  ${(t / r.requests).toFixed(3)} ms/turn  ${area}`);
  console.log(
    `\nservice CPU by area (perf samples on a CPU, kernel included; native, kernel and node: frames charged to their caller's area): ` +
      `${(sampled / r.requests).toFixed(2)} ms/turn sampled, ${cpuPerTurnMs.toFixed(2)} ms/turn by /proc\n${rows.join('\n')}`,
  );
  const functions = [...byFunction.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(args.top))
    .map(([name, t]) => `${((100 * t) / sampled).toFixed(1).padStart(5)}%  ${(t / r.requests).toFixed(3)} ms/turn  ${name}`);
  console.log(`\nthe main thread by nearest JS function (the same samples):\n${functions.join('\n')}`);
  await rm(profDir, { recursive: true, force: true });
  process.exit(0);
}

const file = (await readdir(profDir)).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error('no profile written');
const prof = JSON.parse(await readFile(path.join(profDir, file), 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
};
const self = new Map<number, number>();
let stamp = prof.startTime;
prof.samples.forEach((id, i) => {
  stamp += prof.timeDeltas[i] ?? 0;
  if (stamp < measuredFrom || stamp > measuredTo) return;
  self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
});
if (!self.size) throw new Error('no profile sample falls in the measured slice: the clocks differ');
const total = [...self.values()].reduce((a, b) => a + b, 0);
const byFn = new Map<string, number>();
const byPkg = new Map<string, number>();
for (const n of prof.nodes) {
  const t = self.get(n.id) ?? 0;
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  const pkg =
    /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
    (url.startsWith(ROOT)
      ? `app:${url.slice(ROOT.length).split('/').slice(0, 3).join('/')}`
      : url
        ? url.split('/').slice(0, 3).join('/')
        : n.callFrame.functionName || '(native)');
  const key = `${n.callFrame.functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`;
  byFn.set(key, (byFn.get(key) ?? 0) + t);
  byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + t);
}
const show = (m: Map<string, number>, n: number) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1000 / Math.max(1, r.requests)).toFixed(3)} ms/req  ${k}`)
    .join('\n');
console.log(`\nservice CPU by package (self time in the measured slice; ${(total / 1e6).toFixed(1)} s total):\n${show(byPkg, 20)}`);
const areas = selfTimeByArea(prof.nodes, self, ROOT);
areas.delete('(idle)');
const busy = [...areas.values()].reduce((sum, t) => sum + t, 0);
const areaRows = [...areas.entries()]
  .sort((a, b) => b[1] - a[1])
  .map(([area, t]) => `${((100 * t) / busy).toFixed(1).padStart(5)}%  ${((cpuPerTurnMs * t) / busy).toFixed(3)} ms/turn  ${area}`);
console.log(
  `\nservice CPU by area (share of the busy samples, native and node: frames charged to their caller's area, times the measured ${cpuPerTurnMs.toFixed(2)} ms CPU per turn; sampled ${(busy / 1000 / Math.max(1, r.requests)).toFixed(2)} ms/turn):\n${areaRows.join('\n')}`,
);
console.log(`\nservice CPU by function:\n${show(byFn, Number(args.top))}`);
// Who calls the heaviest native frames (writev, ...): self time by caller chain.
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const nodeById = new Map(prof.nodes.map((n) => [n.id, n]));
for (const native of ['writev', 'writeUtf8String', 'writeBuffer']) {
  const chains = new Map<string, number>();
  for (const n of prof.nodes) {
    if (n.callFrame.functionName !== native) continue;
    const names: string[] = [];
    for (let p = parent.get(n.id); p !== undefined && names.length < 14; p = parent.get(p)) {
      const f = nodeById.get(p)!.callFrame;
      names.push(`${f.functionName || '(anon)'}@${f.url.split('/').slice(-2).join('/')}`);
    }
    const key = names.join(' < ');
    chains.set(key, (chains.get(key) ?? 0) + (self.get(n.id) ?? 0));
  }
  if (chains.size) console.log(`\ncallers of ${native}:\n${show(chains, 6)}`);
}
await rm(profDir, { recursive: true, force: true });
