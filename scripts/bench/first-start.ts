// A new user's first run: `npm run bench -- first-start [--runs 3] [--idle-seconds 30]`. Each run
// clones this checkout's HEAD (committed code only) into a temporary directory, gives it this
// checkout's node_modules (hard links: `npm ci` is not what is measured) and runs the install step
// that `npm ci` ends with (`npm run postinstall`, timed apart), and times `npm start`
// (its build included) from spawn to the first 200 of /readyz on a fresh embedded database. Then,
// after --idle-seconds without requests, the resident memory of the API process and of its embedded
// Postgres child (VmRSS from /proc). The load average is printed with every run: on a shared machine
// the times move with it.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { childrenOf, commandLineIncludes, memoryOf } from './rss.js';
import { freePort } from './service.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    'idle-seconds': { type: 'string', default: '30' },
  },
});

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readyAfter(url: string, child: ChildProcess, t0: number): Promise<number> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited with code ${child.exitCode}`);
    const ok = await fetch(url).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return (performance.now() - t0) / 1000;
    await sleep(100);
  }
}

function isNode(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node';
  } catch {
    return false;
  }
}

/** The process running the compiled API under npm (npm → sh → node), and its embedded database's. */
function processesUnder(pid: number): { api?: number; database?: number } {
  const all: number[] = [];
  const walk = (p: number) => {
    for (const c of childrenOf(p)) {
      all.push(c);
      walk(c);
    }
  };
  walk(pid);
  return {
    api: all.find((p) => isNode(p) && commandLineIncludes(p, 'dist/services/api/server.js')),
    database: all.find((p) => commandLineIncludes(p, 'pglite-process.mjs')),
  };
}

const cleanEnv = () => ({ PATH: process.env.PATH, HOME: process.env.HOME });

const results: { seconds: number; apiMb: number; databaseMb: number }[] = [];
for (let run = 1; run <= Number(args.runs); run++) {
  const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-first-start-'));
  const checkout = path.join(dir, 'memorychat');
  try {
    execFileSync('git', ['clone', '--quiet', '--no-checkout', ROOT, checkout]);
    execFileSync('git', ['-C', checkout, 'checkout', '--quiet', execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD']).toString().trim()]);
    execFileSync('cp', ['-al', path.join(ROOT, 'node_modules'), path.join(checkout, 'node_modules')]);
    // A template left in this checkout's node_modules would not be the clone's own install's.
    await rm(path.join(checkout, 'node_modules', '.cache', 'memorychat'), { recursive: true, force: true });
    const installStarted = performance.now();
    execFileSync('npm', ['run', '-s', 'postinstall'], { cwd: checkout, env: cleanEnv() });
    const installSeconds = (performance.now() - installStarted) / 1000;
    const port = await freePort();
    const t0 = performance.now();
    const child = spawn('npm', ['start'], {
      cwd: checkout,
      env: { ...cleanEnv(), PORT: String(port), DATA_DIR: path.join(dir, 'data') },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    try {
      const seconds = await readyAfter(`http://127.0.0.1:${port}/readyz`, child, t0);
      const atReady = load();
      await sleep(Number(args['idle-seconds']) * 1000);
      const { api, database } = processesUnder(child.pid!);
      const apiMb = (api && memoryOf(api)?.rssMb) || NaN;
      const databaseMb = (database && memoryOf(database)?.rssMb) || NaN;
      results.push({ seconds, apiMb, databaseMb });
      console.log(
        `run ${run}: install step ${installSeconds.toFixed(1)} s; ready in ${seconds.toFixed(1)} s (load average ${atReady}); idle ${args['idle-seconds']} s: API ${apiMb.toFixed(0)} MB + embedded Postgres ${databaseMb.toFixed(0)} MB = ${(apiMb + databaseMb).toFixed(0)} MB (load average ${load()})`,
      );
    } catch (err) {
      console.error(stderr);
      throw err;
    } finally {
      // The whole group: npm, its shell and the API (which stops its database child).
      process.kill(-child.pid!, 'SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      await sleep(1000);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `median of ${results.length}: ready in ${median(results.map((r) => r.seconds)).toFixed(1)} s; idle API ${median(results.map((r) => r.apiMb)).toFixed(0)} MB + embedded Postgres ${median(results.map((r) => r.databaseMb)).toFixed(0)} MB = ${median(results.map((r) => r.apiMb + r.databaseMb)).toFixed(0)} MB`,
);
