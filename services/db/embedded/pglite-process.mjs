// The embedded Postgres (PGlite + pgvector) behind a Postgres wire-protocol socket, in its own
// process: run in the service's process, a 47 ms query stalled its event loop for 42 ms.
// Plain JavaScript so that it forks without a TypeScript loader.
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

// Unset or empty: in memory (the demo's engine, db/demo/demo-engine.ts).
const dataDir = process.env.MEMORYCHAT_PGLITE_DATA_DIR || undefined;
const withVector = process.env.MEMORYCHAT_PGLITE_VECTOR !== 'off';
const socketPath = process.env.MEMORYCHAT_PGLITE_SOCKET;
// In memory, from a data directory dumped earlier (a tarball) instead of initdb: the demo's engine.
const loadFrom = process.env.MEMORYCHAT_PGLITE_LOAD_FROM || undefined;
// Create the data directory's cluster (initdb) and exit: see initialiseDataDir in embedded-postgres.ts.
const initOnly = process.env.MEMORYCHAT_PGLITE_INIT_ONLY === 'on';
const sharedBuffersMb = Number(process.env.MEMORYCHAT_PGLITE_SHARED_BUFFERS_MB) || 32;

// How long a new connection waits for the previous one to be released before it is refused.
const HANDOVER_WAIT_MS = 2000;

/**
 * The socket server, one attached connection at a time (see below), except that a connection arriving
 * while the previous one is still being released waits for it instead of being refused: a client that
 * reconnects at once after its connection broke (a reset, a killed socket) gets here before the
 * server has handled the old close, and was told "Too many connections", failing a write that the
 * service had rightly retried on a fresh connection.
 */
class OneConnectionAtATime extends PGLiteSocketServer {
  async handleConnection(socket) {
    const deadline = Date.now() + HANDOVER_WAIT_MS;
    while (this.active && this.handlers.size > 0 && Date.now() < deadline && !socket.destroyed) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    if (socket.destroyed) return;
    // A refused socket is destroyed, not just ended: the base class's end() left a client that never
    // closed its side connected, and stopping the server then waited for it for ever.
    // Checked in the same tick as the base class attaches, so two waiting connections never both get in.
    if (!this.active) {
      socket.destroy();
      return;
    }
    if (this.handlers.size > 0) {
      socket.end('Too many connections\n', () => socket.destroy());
      return;
    }
    return super.handleConnection(socket);
  }
}

let db;
let server;
let stopping = false;

async function stop(code) {
  if (stopping) return;
  stopping = true;
  try {
    await server?.stop();
    await db?.close();
  } finally {
    process.exit(code);
  }
}

try {
  // wal_recycle=off: WAL segments a checkpoint retires are deleted rather than renamed for reuse with
  // their old contents, so erased rows do not linger in pg_wal (db/row-security.ts, reclaimErasedRows).
  // PGlite touches all of its shared buffers at start, inside its WebAssembly memory, which never
  // shrinks: PGlite's default of 128 MB is 128 MB of RSS from the first second. On disk, 32 MB (the
  // operating system's page cache holds the rest of the files) unless EMBEDDED_SHARED_BUFFERS_MB says
  // more, for a heavy user's approximate index (docs/scaling.md); in memory (the demo's engine, about
  // 1 MB of data), 16 MB. maintenance_work_mem bounds what an index build adds to that memory for good.
  const memory = dataDir ? [`shared_buffers=${sharedBuffersMb}MB`, 'maintenance_work_mem=16MB'] : ['shared_buffers=16MB'];
  db = await PGlite.create({
    dataDir,
    ...(loadFrom ? { loadDataDir: new Blob([await readFile(loadFrom)]) } : {}),
    extensions: withVector ? { vector } : {},
    startParams: [...PGlite.defaultStartParams, '-c', 'wal_recycle=off', ...memory.flatMap((setting) => ['-c', setting])],
  });
  if (initOnly) {
    await db.close();
    process.exit(0);
  }
  // One connection only: the socket server multiplexes every connection onto one Postgres session,
  // and concurrent parameterized queries over several connections were seen to get each other's rows.
  // The limit of one is OneConnectionAtATime's; the base class's own limit would refuse at once.
  server = new OneConnectionAtATime({ db, path: socketPath, maxConnections: 64 });
  // The session outlives its connections: a new connection would find the transaction (with its
  // role and identity) and the named (prepared) statements of one that broke mid-way, and its own
  // Parse of the same names would fail. A connection is attached before any of its bytes are read,
  // so this runs ahead of its first statement.
  server.addEventListener('connection', () => {
    db.exec('ROLLBACK; DEALLOCATE ALL').catch((err) => console.error(`embedded Postgres: resetting the session failed: ${err.message}`));
  });
  await server.start();
  process.send?.({ type: 'ready' });
} catch (err) {
  process.send?.({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
  await stop(1);
}

process.on('message', (msg) => {
  if (msg?.type === 'stop') void stop(0);
  if (msg?.type === 'dump') void dump(msg.file);
});

/** Writes the data directory as a tarball to `file` (beside it first, then renamed: never half a file). */
async function dump(file) {
  const partial = `${file}.${process.pid}.partial`;
  try {
    await writeFile(partial, Buffer.from(await (await db.dumpDataDir('none')).arrayBuffer()));
    await rename(partial, file);
    process.send?.({ type: 'dumped' });
  } catch (err) {
    await rm(partial, { force: true });
    process.send?.({ type: 'dump-failed', message: err instanceof Error ? err.message : String(err) });
  }
}
// The parent is gone (crashed or killed): close the database cleanly rather than linger.
process.on('disconnect', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => void stop(0));
