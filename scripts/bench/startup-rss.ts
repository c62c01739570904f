// Start time and resident memory of the API run through tsx (how `npm start` ran it before issue 17)
// against the compiled API (`npm start` and the image now), side by side on the same machine:
//
//   node --import tsx scripts/bench/startup-rss.ts [--runs 5] [--idle-seconds 5]
//        [--database-url postgres://postgres@127.0.0.1:5432/postgres]   server database instead of embedded
//        [--load-clients 50 --load-seconds 20]                           also RSS under /memoryChat load
//
// Each run starts both variants in turn (alternating which goes first) from the same migrated state: a
// copy of one migrated DATA_DIR, or one database created on the server for the script and dropped
// after. Start time: spawn to the "memorychat ready" log line. Idle RSS: the sum of VmRSS over the
// API's whole process tree (node, the embedded database's child, tsx's esbuild) after --idle-seconds.
// Under load: the largest such sum sampled every 200 ms while the clients run SParC conversations
// against an instant answerer (scripts/bench/workload.ts). Medians are printed last.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { percentile, runLoad } from './load.js';
import { childrenOf, memoryOf } from './rss.js';
import { freePort, JWT_SECRET, serviceTurns } from './service.js';
import { conversationClient, startInstantAnswerer } from './workload.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VARIANTS = {
  tsx: ['--import', 'tsx', 'services/api/server.ts'],
  compiled: ['dist/services/api/server.js'],
} as const;
type Variant = keyof typeof VARIANTS;

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    'idle-seconds': { type: 'string', default: '5' },
    'database-url': { type: 'string' },
    'load-clients': { type: 'string', default: '50' },
    'load-seconds': { type: 'string', default: '0' },
  },
});
const runs = Number(args.runs);
const idleMs = Number(args['idle-seconds']) * 1000;
const loadSeconds = Number(args['load-seconds']);

interface Started {
  child: ChildProcess;
  startMs: number;
  baseUrl: string;
  stop(): Promise<void>;
}

async function start(variant: Variant, env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, VARIANTS[variant], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'production',
      JWT_SECRET,
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const startMs = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      if (out.includes('memorychat ready')) resolve(performance.now() - t0);
    });
    child.once('exit', (code) => reject(new Error(`${variant} exited during start (code ${code}): ${out}`)));
  });
  child.stdout!.resume();
  return {
    child,
    startMs,
    baseUrl: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The process and all its descendants. */
function tree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap(tree)];
}

function treeRssMb(pid: number): { mb: number; processes: number } {
  const pids = tree(pid);
  return { mb: pids.reduce((sum, p) => sum + (memoryOf(p)?.rssMb ?? 0), 0), processes: pids.length };
}

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One migrated state per variant run: a DATA_DIR copy, or a server database made for this script. */
async function prepareDatabase(): Promise<{ env: () => Promise<Record<string, string>>; cleanup: () => Promise<void> }> {
  if (args['database-url']) {
    const admin = new pg.Client({ connectionString: args['database-url'] });
    await admin.connect();
    const name = `memorychat_bench_${randomBytes(4).toString('hex')}`;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(args['database-url']);
    url.pathname = `/${name}`;
    const env = { DATABASE_URL: url.toString() };
    await (await start('compiled', env)).stop(); // migrates it once
    return {
      env: async () => env,
      cleanup: async () => {
        await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
        await admin.end();
      },
    };
  }
  const template = await mkdtemp(path.join(tmpdir(), 'memorychat-bench-template-'));
  await (await start('compiled', { DATA_DIR: template })).stop(); // initdb and migrations once
  const dirs = [template];
  return {
    env: async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-bench-'));
      dirs.push(dir);
      await cp(template, dir, { recursive: true });
      return { DATA_DIR: dir };
    },
    cleanup: async () => {
      await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
    },
  };
}

async function underLoad(variant: Variant, env: Record<string, string>, answerUrl: string) {
  const service = await start(variant, { ...env, ANSWER_URL: answerUrl, ANSWER_AUTH: 'none' });
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, treeRssMb(service.child.pid!).mb)), 200);
  const clients = Number(args['load-clients']);
  const { turn, close } = serviceTurns(service.baseUrl, clients);
  try {
    const result = await runLoad({ clients, warmupMs: 2000, durationMs: loadSeconds * 1000, maxRequests: 1e7 }, (i) =>
      conversationClient(30_000 + i, 1000, turn),
    );
    return { peakMb: peak, rps: result.rps, errors: result.errors, firstError: result.firstError };
  } finally {
    clearInterval(sampler);
    await close();
    await service.stop();
  }
}

execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' });
const database = await prepareDatabase();
const mode = args['database-url'] ? 'server database (DATABASE_URL)' : 'embedded database';
const results: Record<Variant, { startMs: number[]; idleMb: number[]; processes: number[]; loadMb: number[] }> = {
  tsx: { startMs: [], idleMb: [], processes: [], loadMb: [] },
  compiled: { startMs: [], idleMb: [], processes: [], loadMb: [] },
};
try {
  // One unmeasured start of each, so that both meet a warm file cache (and tsx its transform cache).
  for (const variant of ['tsx', 'compiled'] as const) await (await start(variant, await database.env())).stop();
  for (let run = 0; run < runs; run++) {
    const order: Variant[] = run % 2 === 0 ? ['tsx', 'compiled'] : ['compiled', 'tsx'];
    for (const variant of order) {
      const service = await start(variant, await database.env());
      await sleep(idleMs);
      const idle = treeRssMb(service.child.pid!);
      await service.stop();
      results[variant].startMs.push(service.startMs);
      results[variant].idleMb.push(idle.mb);
      results[variant].processes.push(idle.processes);
      console.log(
        `${mode} run ${run + 1} ${variant}: start ${service.startMs.toFixed(0)} ms, idle RSS ${idle.mb.toFixed(0)} MB in ${idle.processes} processes`,
      );
    }
  }
  if (loadSeconds > 0) {
    const answerer = await startInstantAnswerer();
    for (let run = 0; run < runs; run++) {
      for (const variant of run % 2 === 0 ? (['tsx', 'compiled'] as const) : (['compiled', 'tsx'] as const)) {
        const load = await underLoad(variant, await database.env(), answerer.url);
        results[variant].loadMb.push(load.peakMb);
        console.log(
          `${mode} run ${run + 1} ${variant}: ${args['load-clients']} clients for ${loadSeconds} s, ${load.rps.toFixed(0)} requests/s, ` +
            `${load.errors} errors${load.firstError ? ` (${load.firstError})` : ''}, peak RSS ${load.peakMb.toFixed(0)} MB`,
        );
      }
    }
    answerer.server.close();
  }
} finally {
  await database.cleanup();
}
for (const variant of ['tsx', 'compiled'] as const) {
  const r = results[variant];
  console.log(
    `${mode}, ${variant}, median of ${runs}: start ${median(r.startMs).toFixed(0)} ms, idle RSS ${median(r.idleMb).toFixed(0)} MB ` +
      `(${median(r.processes)} processes)` +
      (r.loadMb.length ? `, peak RSS under load ${median(r.loadMb).toFixed(0)} MB (max ${Math.max(...r.loadMb).toFixed(0)})` : ''),
  );
}
