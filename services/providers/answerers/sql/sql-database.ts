import pg from 'pg';
import type { FairQueue } from './sql-fair-queue.js';

/** Where the sql answerer's statements run, and under which limits (docs/design.md §5). */
export interface SqlDatabase {
  /** A connection for one transaction; waits at most SQL_POOL_WAIT_MS (pg-pool's timeout error past it). */
  connect(): Promise<pg.PoolClient>;
  /** Ends the statement running on `client` and the connection with it: pg_terminate_backend on a server, a restart of the demo's engine. */
  cancel(client: pg.PoolClient): Promise<void>;
  /** The connections, shared fairly between tenants: a transaction takes one before it connects. */
  queue: FairQueue;
  /**
   * The role every statement takes for its transaction. embedded-demo: a role that reads the demo
   * schema only, because the engine's login is its superuser. Unset: the login of SQL_DATABASE_URL,
   * whose own grants bound what the SQL can read (checked at start: sql-login-check.ts).
   */
  role?: string;
  /** The allow-listed schemas: the LLM sees these, and unqualified names resolve in them. */
  schemas: string[];
  /** SQL_STATEMENT_TIMEOUT_MS: the time one question's transactions may run, together. */
  statementTimeoutMs: number;
  /** A query the planner estimates above this is not run. */
  maxPlanCost?: number;
  /**
   * client_connection_check_interval for each transaction (a server's, PostgreSQL 14+; PGlite cannot
   * watch its socket): how soon a backend whose client closed the connection notices it mid-statement.
   */
  clientCheckIntervalMs?: number;
}

/**
 * What one transaction may take: `budget.leftMs` of running time, shared by the transactions of one
 * question and spent by each as it runs; a connection from `tenant`'s share; and it ends when
 * `signal` aborts (the client went away).
 */
export interface TransactionBounds {
  budget: { leftMs: number };
  tenant: string;
  signal?: AbortSignal;
}

/** The transaction was ended from outside: past the question's budget (`timeout`) or because the client went away (`cancelled`). */
export class StatementEndedError extends Error {
  override name = 'StatementEndedError';
  constructor(
    readonly reason: 'timeout' | 'cancelled',
    options: { cause: unknown },
  ) {
    super(reason === 'timeout' ? 'the statement ran past its timeout and was ended' : 'the statement was cancelled', options);
  }
}

/** How soon a server's backend notices mid-statement that its client closed the connection (below). */
const CLIENT_CHECK_INTERVAL_MS = 1000;

/**
 * A server's SqlDatabase: its pool, and cancel through pg_terminate_backend (a login may end its own
 * backends) on a connection of its own, as the pool may be full. Terminate, not cancel: a cancel
 * that arrives between two statements of the transaction (the DECLARE done, the FETCH not sent) is
 * lost and the FETCH runs on; the connection is dropped afterwards anyway. When that connection
 * cannot be had (max_connections, the login's CONNECTION LIMIT, the server refusing it) or the
 * terminate does not take, the question's own socket is closed from our side: its statement fails at
 * once, and the backend ends when it notices the closed socket (client_connection_check_interval,
 * set for each transaction, unless the SQL lifted that too: then at its next write).
 */
export function serverSqlDatabase(pool: pg.Pool, limits: Omit<SqlDatabase, 'connect' | 'cancel'>): SqlDatabase {
  return {
    clientCheckIntervalMs: CLIENT_CHECK_INTERVAL_MS,
    ...limits,
    connect: () => pool.connect(),
    async cancel(client) {
      const terminated = await terminateBackend(pool.options, (client as pg.PoolClient & { processID?: number }).processID).catch(
        (err: unknown) => {
          closeSocket(client);
          throw err;
        },
      );
      if (!terminated) closeSocket(client);
    },
  };
}

/** pg_terminate_backend of `pid`, from a connection of its own: true when the backend was signalled. */
async function terminateBackend(options: pg.PoolConfig, pid: number | undefined): Promise<boolean> {
  const canceller = new pg.Client(options);
  // A connection that drops mid-statement rejects the statement and also emits 'error': unheard, that
  // event would end the process.
  canceller.on('error', () => {});
  await canceller.connect();
  try {
    const result = await canceller.query<{ terminated: boolean }>('SELECT pg_terminate_backend($1) AS terminated', [pid]);
    return result.rows[0]?.terminated === true;
  } finally {
    await canceller.end();
  }
}

/**
 * Destroys the socket under `client`: its running query rejects at once. Not client.end(), which
 * destroys it too while a query runs (pg 8.23): the pool ends its clients, and the transaction
 * releases this one to it with an error. A Terminate message would be read only after the statement.
 */
function closeSocket(client: pg.PoolClient): void {
  (client as unknown as pg.Client).connection.stream.destroy();
}

/**
 * Runs `work` in a READ ONLY transaction that is always rolled back, with a statement timeout, the
 * allow-listed search_path and, when set, the reader role, all transaction-local. The service ends
 * the transaction itself (db.cancel, from outside the connection) when it has run past what is left
 * of the question's budget, or when `signal` aborts: statement_timeout bounds one statement only, and
 * the SQL may lift it (set_config('statement_timeout', '0', true)), or stretch a question over many
 * fetches (64 columns of pg_sleep: one row per fetch). Either way `work`'s failure becomes a
 * StatementEndedError. What a statement may leave on its session beyond the rollback (a
 * pg_advisory_lock, a session setting) is discarded before the connection goes back to the pool.
 */
export async function inReadOnlyTransaction<T>(
  db: SqlDatabase,
  work: (client: pg.PoolClient) => Promise<T>,
  bounds: TransactionBounds,
): Promise<T> {
  const { budget, signal } = bounds;
  const leftMs = Math.floor(budget.leftMs);
  // Gone before anything ran: nothing to cancel, and nothing to run.
  if (signal?.aborted) throw new StatementEndedError('cancelled', { cause: signal.reason });
  // The question's earlier transactions spent its budget: this one does not begin.
  if (leftMs < 1) throw new StatementEndedError('timeout', { cause: undefined });
  const release = await db.queue.acquire(bounds.tenant, signal).catch((err: unknown) => {
    throw signal?.aborted ? new StatementEndedError('cancelled', { cause: err }) : err;
  });
  let client: pg.PoolClient;
  try {
    client = await db.connect();
  } catch (err) {
    release();
    throw err;
  }
  let broken: Error | undefined;
  const onConnectionError = (err: Error) => {
    broken = err;
  };
  client.on('error', onConnectionError);
  let ended: StatementEndedError['reason'] | undefined;
  const end = (reason: StatementEndedError['reason']) => {
    if (ended) return;
    ended = reason;
    // A cancel that fails has done what it could (a server's: closed the connection from our side;
    // the demo's: the next statement retries the restart); the connection is dropped below either way.
    db.cancel(client).catch(() => {});
  };
  const began = performance.now();
  const deadline = setTimeout(() => end('timeout'), leftMs);
  const onAbort = () => end('cancelled');
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    // Gone while it connected: nothing to cancel, and nothing to run.
    if (signal?.aborted) throw new StatementEndedError('cancelled', { cause: signal.reason });
    await client.query('BEGIN READ ONLY');
    const settings: [string, string][] = [
      ['statement_timeout', String(leftMs)],
      ['search_path', db.schemas.map((schema) => pg.escapeIdentifier(schema)).join(', ')],
    ];
    if (db.clientCheckIntervalMs !== undefined) settings.push(['client_connection_check_interval', String(db.clientCheckIntervalMs)]);
    await client.query(`SELECT ${settings.map((_, i) => `set_config($${2 * i + 1}, $${2 * i + 2}, true)`).join(', ')}`, settings.flat());
    if (db.role) await client.query(`SET LOCAL ROLE ${pg.escapeIdentifier(db.role)}`);
    return await work(client);
  } catch (err) {
    if (ended && !(err instanceof StatementEndedError)) throw new StatementEndedError(ended, { cause: err });
    throw err;
  } finally {
    clearTimeout(deadline);
    signal?.removeEventListener('abort', onAbort);
    budget.leftMs -= performance.now() - began;
    if (!ended) {
      // DISCARD ALL cannot run inside a transaction: after the rollback, it releases advisory locks
      // and resets settings, prepared statements, listens and temporary tables of the session.
      await client
        .query('ROLLBACK')
        .then(() => client.query('DISCARD ALL'))
        .catch((err: Error) => {
          broken = err;
        });
    }
    client.removeListener('error', onConnectionError);
    // Ended: the connection is dropped, not reused, so that a cancel arriving late cannot reach the
    // next transaction on it (and a killed engine's connection is gone anyway).
    client.release(broken ?? (ended ? new StatementEndedError(ended, { cause: undefined }) : undefined));
    release();
  }
}
