import type pg from 'pg';

/**
 * A checked-out client for `work`. One whose connection drops (a database restart) emits 'error';
 * unheard, that event would crash the process (pool.query() listens the same way; the pending query
 * rejects anyway). A connection marked broken is dropped from the pool rather than reused.
 */
export async function withClient<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, markBroken: (err: Error) => void) => Promise<T>,
): Promise<T> {
  const client = await connect(pool);
  let broken: Error | undefined;
  const markBroken = (err: Error) => {
    broken ??= err;
  };
  client.on('error', markBroken);
  try {
    return await work(client, markBroken);
  } finally {
    client.removeListener('error', markBroken);
    client.release(broken);
  }
}

/** Long enough for the embedded server to notice that the connection it admitted is gone. */
const RECONNECT_DELAY_MS = 100;

/**
 * A connection that fails to open has run nothing, so opening it is tried once more: the embedded
 * server admits one connection and frees its slot only a moment after the previous one drops, so a
 * statement right after a dropped connection would otherwise fail while the database is fine.
 */
async function connect(pool: pg.Pool): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch {
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_DELAY_MS));
    return pool.connect();
  }
}
