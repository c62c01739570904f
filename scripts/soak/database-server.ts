// The soak's database server: PGlite with pgvector behind a Postgres socket, in its own process, that
// the service reaches through DATABASE_URL like any server. The machine's PostgreSQL 15 has no
// pgvector, so this is the same process the embedded mode forks (services/db/embedded/pglite-process.mjs), on a
// fixed socket path so that it can be restarted under the service. It serves ONE connection at a time.
import { type ChildProcess, fork } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PGLITE_PROCESS = fileURLToPath(new URL('../../services/db/embedded/pglite-process.mjs', import.meta.url));
const START_TIMEOUT_MS = 120_000;

export interface DatabaseServer {
  /** DATABASE_URL for the service (a Unix socket; one connection at a time). */
  url: string;
  /** Stops the process as a database restart does: open connections drop, open transactions roll back. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Removes the socket and the data. */
  close(): Promise<void>;
}

/**
 * Starts the server on a new data directory, copied from `templateDataDir` (a stopped embedded
 * DATA_DIR, e.g. the tests' migrated template) when given, else initialised empty.
 */
export async function startDatabaseServer(options: { templateDataDir?: string } = {}): Promise<DatabaseServer> {
  // Unix socket paths are limited to ~107 bytes: a short directory of its own.
  const socketDir = await mkdtemp(path.join(tmpdir(), 'memorychat-soak-pg-'));
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-soak-data-'));
  if (options.templateDataDir) await cp(path.join(options.templateDataDir, 'pg'), path.join(dataDir, 'pg'), { recursive: true });
  let child: ChildProcess | undefined;

  const server: DatabaseServer = {
    url: `postgresql://postgres@localhost/postgres?host=${encodeURIComponent(socketDir)}`,
    async start() {
      const started = fork(PGLITE_PROCESS, [], {
        env: {
          PATH: process.env.PATH ?? '',
          MEMORYCHAT_PGLITE_DATA_DIR: path.join(dataDir, 'pg'),
          MEMORYCHAT_PGLITE_SOCKET: path.join(socketDir, '.s.PGSQL.5432'),
        },
        execArgv: [],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      await waitForReady(started);
      child = started;
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.send({ type: 'stop' });
      await exited;
    },
    async close() {
      await server.stop();
      await rm(socketDir, { recursive: true, force: true });
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

function waitForReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the database server did not start in time'));
    }, START_TIMEOUT_MS);
    child.once('message', (msg: { type: string; message?: string }) => {
      clearTimeout(timer);
      if (msg.type === 'ready') resolve();
      else reject(new Error(`the database server failed to start: ${msg.message}`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the database server exited during start (code ${code})`));
    });
  });
}
