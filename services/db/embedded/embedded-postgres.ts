import { type ChildProcess, fork } from 'node:child_process';
import { access, mkdir, mkdtemp, open, readFile, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyClusterTemplate, initialiseCluster } from './cluster-template.mjs';

const CHILD = fileURLToPath(new URL('./pglite-process.mjs', import.meta.url));
export const START_TIMEOUT_MS = 120_000;

export interface EmbeddedPostgres {
  /** `pg` connection settings for the socket (host is the socket's directory). */
  connection: { host: string; port: number; user: string; database: string };
  stop(): Promise<void>;
}

/**
 * Starts PGlite with pgvector under `<dataDir>/pg` in a child process and waits until its socket
 * accepts connections, with `sharedBuffersMb` of shared buffers (EMBEDDED_SHARED_BUFFERS_MB; the
 * child's own size when absent). A lock file keeps a second process from opening the same data directory.
 */
export async function startEmbeddedPostgres(dataDir: string, options: { sharedBuffersMb?: number } = {}): Promise<EmbeddedPostgres> {
  const pgDir = path.resolve(dataDir, 'pg');
  await mkdir(pgDir, { recursive: true });
  const lockFile = path.resolve(dataDir, 'pg.lock');
  await acquireLock(lockFile);
  try {
    await initialiseDataDir(pgDir);
    const pglite = await startPgliteProcess({ dataDir: pgDir, vector: true, sharedBuffersMb: options.sharedBuffersMb });
    return {
      connection: pglite.connection,
      async stop() {
        await pglite.stop();
        await unlink(lockFile).catch(() => {});
      },
    };
  } catch (err) {
    await unlink(lockFile).catch(() => {});
    throw err;
  }
}

/** A new data directory gets the install's template cluster, or (without one) its own initdb. */
async function initialiseDataDir(pgDir: string): Promise<void> {
  const exists = await access(path.join(pgDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
  if (exists) return;
  if (await copyClusterTemplate(pgDir)) return;
  await initialiseCluster(pgDir);
}

/** A PGlite child process behind its socket. */
export interface PgliteProcess extends EmbeddedPostgres {
  readonly pid: number | undefined;
  /** Ends it at once (SIGKILL), whatever it is running: PGlite cannot cancel a statement. */
  kill(): Promise<void>;
  /** Writes its data directory, as it is now, as a tarball to `file`, which `loadFrom` starts another from. */
  dumpTo(file: string): Promise<void>;
}

/**
 * Forks db/embedded/pglite-process.mjs: on `dataDir`, or in memory when unset (nothing on disk,
 * nothing to recover after a kill), then from the tarball `loadFrom` when set instead of a fresh
 * initdb; with the pgvector extension only when `vector`, and `sharedBuffersMb` of shared buffers on
 * disk (absent: pglite-process.mjs's own sizes, on disk and in memory).
 */
export async function startPgliteProcess(options: {
  dataDir?: string;
  loadFrom?: string;
  vector: boolean;
  sharedBuffersMb?: number;
}): Promise<PgliteProcess> {
  // Unix socket paths are limited to ~107 bytes, so the socket lives in a short temporary directory.
  const socketDir = await mkdtemp(path.join(tmpdir(), 'memorychat-pg-'));
  const child = fork(CHILD, [], {
    env: {
      ...process.env,
      // V8 compiles PGlite's WebAssembly, and again, optimised, its hot functions, on worker threads whose
      // compiler memory glibc keeps in per-thread arenas once freed: 55-75 MB of the idle process. Blocks of
      // 32 KB and more (the compiler's) are mapped on their own and so given back when freed. Idle RSS
      // 155-171 MB against 210-248 MB; CPU once warmed up the same (1.21-1.23 s against 1.19-1.22 s for
      // 2,000 inserts and 300 searches), 15-30% more while the compiler runs in the first minutes.
      MALLOC_MMAP_THRESHOLD_: '32768',
      MEMORYCHAT_PGLITE_DATA_DIR: options.dataDir ?? '',
      MEMORYCHAT_PGLITE_LOAD_FROM: options.loadFrom ?? '',
      MEMORYCHAT_PGLITE_VECTOR: options.vector ? 'on' : 'off',
      MEMORYCHAT_PGLITE_SHARED_BUFFERS_MB: String(options.sharedBuffersMb ?? ''),
      MEMORYCHAT_PGLITE_SOCKET: path.join(socketDir, '.s.PGSQL.5432'),
    },
    execArgv: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    await waitForReady(child);
  } catch (err) {
    child.kill('SIGKILL');
    await rm(socketDir, { recursive: true, force: true });
    throw err;
  }

  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  let stopped: Promise<void> | undefined;
  const end = (how: () => void) => {
    stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) how();
      await exited;
      await rm(socketDir, { recursive: true, force: true });
    })();
    return stopped;
  };
  return {
    connection: { host: socketDir, port: 5432, user: 'postgres', database: 'postgres' },
    pid: child.pid,
    stop: () => end(() => child.send({ type: 'stop' })),
    kill: () => end(() => child.kill('SIGKILL')),
    dumpTo: (file) => dumpOf(child, file),
  };
}

function dumpOf(child: ChildProcess, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onMessage = (msg: { type: string; message?: string }) => {
      if (msg.type !== 'dumped' && msg.type !== 'dump-failed') return;
      child.off('message', onMessage).off('exit', onExit);
      if (msg.type === 'dumped') resolve();
      else reject(new Error(`embedded Postgres could not dump its data directory: ${msg.message}`));
    };
    const onExit = () => {
      child.off('message', onMessage);
      reject(new Error('embedded Postgres exited during the dump of its data directory'));
    };
    child.on('message', onMessage).once('exit', onExit);
    child.send({ type: 'dump', file });
  });
}

function waitForReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('embedded Postgres did not start in time')), START_TIMEOUT_MS);
    child.once('message', (msg: { type: string; message?: string }) => {
      clearTimeout(timer);
      if (msg.type === 'ready') resolve();
      else reject(new Error(`embedded Postgres failed to start: ${msg.message}`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`embedded Postgres exited during start (code ${code})`));
    });
  });
}

/** Another live process holds the embedded database: only one process can open it. */
export class EmbeddedDatabaseInUseError extends Error {
  override name = 'EmbeddedDatabaseInUseError';
  constructor(
    readonly dataDir: string,
    readonly holderPid: number,
  ) {
    super(`the embedded database in ${dataDir} is in use by process ${holderPid}; stop it or use another DATA_DIR`);
  }
}

async function acquireLock(lockFile: string): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockFile, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(await readFile(lockFile, 'utf8').catch(() => ''));
      if (holder && holder !== process.pid && isAlive(holder)) {
        throw new EmbeddedDatabaseInUseError(path.dirname(lockFile), holder);
      }
      await unlink(lockFile).catch(() => {}); // stale lock from a process that died
    }
  }
  throw new Error(`could not lock ${lockFile}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
