import pg from 'pg';
import { type PgliteProcess, START_TIMEOUT_MS, startPgliteProcess } from '../embedded/embedded-postgres.js';
import { DEMO_READER_ROLE, loadDemoEngine } from './demo-dataset.js';
import { demoImage } from './demo-image.js';

/**
 * SQL_DATABASE_URL=embedded-demo: the demo dataset in a PGlite of its own, in memory, in a child
 * process apart from the memory store's. PGlite cannot time out or cancel a statement (WebAssembly
 * has no timer interrupt), so the only way to end one is to kill the engine: `restart` does that and
 * starts a fresh one, while the memory store runs on. A fresh engine starts from the image of a loaded
 * one (demo-image.ts) when there is one, else with initdb and the load, and leaves the image behind.
 */
export interface DemoEngine {
  /** The role every statement takes: reads the demo schema and nothing else. */
  readonly role: string;
  /** A connection to the running engine; during a restart, to the next one. */
  connect(): Promise<pg.PoolClient>;
  /** Kills the engine with whatever it runs and starts another; calls during a restart join it. */
  restart(): Promise<void>;
  /** The engine's process id, to measure it; undefined during a restart. */
  pid(): number | undefined;
  close(): Promise<void>;
}

interface Incarnation {
  process: PgliteProcess;
  pool: pg.Pool;
}

/**
 * `waitMs` bounds how long `connect` waits, for the one connection (a statement running) or for a
 * restart: past it, pg-pool's "timeout exceeded when trying to connect".
 */
export async function startDemoEngine(options: {
  waitMs: number;
  log?: { warn(obj: object, msg: string): void };
  /** Where the image of a loaded engine is kept; by default beside the embedded cluster template. */
  imageFile?: string;
}): Promise<DemoEngine> {
  let enginePid: number | undefined;
  const image = demoImage(options.imageFile);
  let current: Promise<Incarnation> = startIncarnation(options.waitMs);
  await current;
  let restarting: Promise<void> | undefined;
  let closed = false;

  const restart = () => {
    restarting ??= (async () => {
      // Replaced at once, before any await: a connect() from now on waits for the next engine.
      const old = current;
      current = (async () => {
        const incarnation = await old.catch(() => undefined);
        if (incarnation) {
          await incarnation.process.kill();
          await incarnation.pool.end().catch(() => {});
        }
        if (closed) throw new Error('the demo engine is closed');
        return startIncarnation(options.waitMs);
      })();
      await current.catch((err: Error) => options.log?.warn({ err }, 'restarting the demo engine failed; the next statement tries again'));
      restarting = undefined;
    })();
    return restarting;
  };

  return {
    role: DEMO_READER_ROLE,
    async connect() {
      const incarnation = await withDeadline(
        current.catch(async () => {
          // The last start failed: this statement tries once more.
          await restart();
          return current;
        }),
        options.waitMs,
      );
      return incarnation.pool.connect();
    },
    restart,
    pid: () => (restarting ? undefined : enginePid),
    async close() {
      closed = true;
      await restarting;
      const incarnation = await current.catch(() => undefined);
      if (incarnation) {
        await incarnation.pool.end().catch(() => {});
        await incarnation.process.stop();
      }
      await image.close();
    },
  };

  function startIncarnation(waitMs: number): Promise<Incarnation> {
    return (async () => {
      const { process, loaded } = await startFromImage();
      enginePid = process.pid;
      try {
        // Its first connection, and the load over it, are part of the start: an engine just started, fresh
        // or from its image, can take longer on a busy machine than SQL_POOL_WAIT_MS (1 s in a test) to
        // answer its first connection, and that wait is for statements.
        const first = new pg.Client({ ...process.connection, connectionTimeoutMillis: START_TIMEOUT_MS });
        // The engine dying mid-load rejects the load; the 'error' event pg also emits must not end the process.
        first.on('error', () => {});
        await first.connect();
        try {
          if (!loaded) await loadDemoEngine(first);
        } finally {
          await first.end();
        }
        if (!loaded) {
          await image
            .keep(process)
            .catch((err: Error) =>
              options.log?.warn({ err }, 'the loaded demo engine could not be kept as an image; the next start loads it again'),
            );
        }
        const pool = new pg.Pool({ ...process.connection, max: 1, idleTimeoutMillis: 0, connectionTimeoutMillis: waitMs });
        // The kill breaks the idle connection too; the pool drops it, and is replaced with the engine.
        pool.on('error', () => {});
        return { process, pool };
      } catch (err) {
        await process.kill();
        throw err;
      }
    })();
  }

  /** An engine from the image when there is one that starts, else a fresh (empty) one. */
  async function startFromImage(): Promise<{ process: PgliteProcess; loaded: boolean }> {
    const file = await image.file();
    if (file) {
      try {
        return { process: await startPgliteProcess({ vector: false, loadFrom: file }), loaded: true };
      } catch (err) {
        options.log?.warn({ err }, 'the demo engine did not start from its image; it is loaded afresh');
        await image.discard(file);
      }
    }
    return { process: await startPgliteProcess({ vector: false }), loaded: false };
  }
}

/** The pool's own wait message, so that a wait for a restart reads the same as a wait for the connection. */
function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timeout exceeded when trying to connect')), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
