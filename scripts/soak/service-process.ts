// The real service as a child process, started as k8s starts it (`node dist/services/api/server.js`,
// or the worker as `npm run worker` does; `npm run soak` builds dist/ first), so that signals, exit
// codes and restarts are the real ones.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceProcess {
  pid: number;
  port: number;
  baseUrl: string;
  /** Resolves when the process has exited. */
  exited: Promise<ProcessExit>;
  /** What the process wrote to stdout and stderr (its JSON log), for diagnosing a failed run. */
  output(): string;
  /** SIGTERM, then SIGKILL when it is still running after `killAfterMs`. */
  stop(killAfterMs?: number): Promise<ProcessExit>;
  /** SIGKILL at once: a crash, an OOM kill, a node lost. */
  kill(): Promise<ProcessExit>;
}

/** What runs in the process, and the variable that sets the port its /readyz answers on. */
const PROGRAMS = {
  api: { entry: 'dist/services/api/server.js', portVariable: 'PORT' },
  worker: { entry: 'dist/services/worker/worker.js', portVariable: 'WORKER_PORT' },
} as const;

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts the service (or the worker) with exactly `env` (plus PATH and HOME) on `port` (default: a
 * free one) and waits until GET /readyz answers 200: it is listening and its database (and, for the
 * worker, Redis) answers.
 */
export async function startServiceProcess(
  env: Record<string, string>,
  options: {
    program?: keyof typeof PROGRAMS;
    port?: number;
    startTimeoutMs?: number;
    /** Appends all the process writes here. */
    logFile?: string;
  } = {},
): Promise<ServiceProcess> {
  const program = PROGRAMS[options.program ?? 'api'];
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, [program.entry], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', ...env, [program.portVariable]: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    // Enough for diagnosis without growing without bound under load.
    output = (output + chunk.toString('utf8')).slice(-200_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  if (options.logFile) {
    const file = createWriteStream(options.logFile, { flags: 'a' });
    child.stdout!.pipe(file, { end: false });
    child.stderr!.pipe(file, { end: false });
    child.once('close', () => file.end());
  }
  const exited = new Promise<ProcessExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const baseUrl = `http://127.0.0.1:${port}`;

  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${program.entry} exited during start (code ${child.exitCode}):\n${output}`);
    }
    const ready = await fetch(`${baseUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${program.entry} was not ready in time:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    pid: child.pid!,
    port,
    baseUrl,
    exited,
    output: () => output,
    async stop(killAfterMs = 20_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      const exit = await exited;
      clearTimeout(timer);
      return exit;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
}
