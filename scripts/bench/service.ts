// The real service as a child process (the compiled build, `node dist/services/api/server.js`, as the
// image runs it; the bench builds it first) on a seeded
// DATA_DIR, and a load client for POST /memoryChat over undici (keep-alive, loopback only).
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createSigner } from 'fast-jwt';
import { Pool } from 'undici';
import { userId } from './data.js';
import { childMatching } from './rss.js';
import type { TurnFn } from './workload.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const JWT_SECRET = 'bench-secret-that-is-at-least-32-characters-long';

export interface RunningService {
  pid: number;
  /** The embedded Postgres: the service's child process. */
  dbPid: number;
  baseUrl: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** `NAME=VALUE,...` (the benches' --env and --service-env) as the service's extra environment. */
export function serviceEnvFrom(pairs: string, option: string): Record<string, string> {
  return Object.fromEntries(
    pairs
      .split(',')
      .filter(Boolean)
      .map((pair) => {
        const at = pair.indexOf('=');
        if (at < 1) throw new Error(`${option} takes NAME=VALUE pairs separated by commas: ${pair}`);
        return [pair.slice(0, at), pair.slice(at + 1)];
      }),
  );
}

export async function startService(dataDir: string, answerUrl: string, extraEnv: Record<string, string> = {}): Promise<RunningService> {
  const profile = process.env.BENCH_CPU_PROF;
  return startHttpProcess([...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []), 'dist/services/api/server.js'], {
    NODE_ENV: 'production',
    DATA_DIR: dataDir,
    ANSWER_URL: answerUrl,
    ANSWER_AUTH: 'none',
    JWT_SECRET,
    LOG_LEVEL: 'warn',
    ...extraEnv,
  });
}

/**
 * The fair LangChain peer (langchain-server.ts) in a process of its own, on a server database
 * (`databaseUrl`) or an embedded copy (`dataDir`), calling the same answerer over HTTP.
 */
export async function startServedPeer(
  answerUrl: string,
  database: { databaseUrl: string } | { dataDir: string },
  extraEnv: Record<string, string> = {},
): Promise<RunningService> {
  return startHttpProcess(['--import', 'tsx', 'scripts/bench/langchain-server.ts'], {
    NODE_ENV: 'production',
    ANSWER_URL: answerUrl,
    ...('databaseUrl' in database ? { PEER_DATABASE_URL: database.databaseUrl } : { PEER_DATA_DIR: database.dataDir }),
    ...extraEnv,
  });
}

/** Node with `args` on a free loopback port (PORT, HOST), ready once GET /healthz answers. */
async function startHttpProcess(args: string[], env: Record<string, string>): Promise<RunningService> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.at(-1)} exited during start (code ${child.exitCode})`);
    try {
      const res = await fetch(`${baseUrl}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${args.at(-1)} did not start in time`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const dbPid = childMatching(child.pid!, 'pglite-process') ?? -1;
  return {
    pid: child.pid!,
    dbPid,
    baseUrl,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** One /memoryChat call per turn, as user `bench-user-N` with an HS256 token. */
export function serviceTurns(baseUrl: string, connections: number): { turn: TurnFn; close: () => Promise<void> } {
  const pool = new Pool(baseUrl, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const sign = createSigner({ key: JWT_SECRET, algorithm: 'HS256', expiresIn: 3_600_000 });
  const tokens = new Map<number, string>();
  const turn: TurnFn = async (t) => {
    let token = tokens.get(t.user);
    if (!token) {
      token = sign({ sub: userId(t.user) });
      tokens.set(t.user, token);
    }
    const res = await pool.request({
      path: '/memoryChat',
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        question: t.question,
        ...(t.sessionId ? { session_id: t.sessionId } : {}),
        vdp_database_names: t.database,
        bench_sql: t.sql,
      }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`);
    const body = JSON.parse(text) as { conversation_metadata: { conversation_id: string }; warnings: string[] };
    if (body.warnings.length) throw new Error(`warnings: ${body.warnings.join('; ')}`);
    return body.conversation_metadata.conversation_id;
  };
  return { turn, close: () => pool.close() };
}
