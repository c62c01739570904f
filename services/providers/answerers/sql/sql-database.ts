import pg from 'pg';

/** Where the sql answerer's statements run, and under which limits (docs/design.md §5). */
export interface SqlDatabase {
  /** A connection for one transaction; waits at most SQL_POOL_WAIT_MS (pg-pool's timeout error past it). */
  connect(): Promise<pg.PoolClient>;
  /** Ends the statement running on `client` and the connection with it: pg_terminate_backend on a server, a restart of the demo's engine. */
  cancel(client: pg.PoolClient): Promise<void>;
  /**
   * The database does not enforce statement_timeout (PGlite: no timer interrupt in WebAssembly): a
   * watchdog calls `cancel` when the transaction runs past it.
   */
  watchdog: boolean;
  /**
   * The role every statement takes for its transaction. embedded-demo: a role that reads the demo
   * schema only, because the engine's login is its superuser. Unset: the login of SQL_DATABASE_URL,
   * whose own grants bound what the SQL can read (checked at start: sql-login-check.ts).
   */
  role?: string;
  /** The allow-listed schemas: the LLM sees these, and unqualified names resolve in them. */
  schemas: string[];
  statementTimeoutMs: number;
  /** A query the planner estimates above this is not run. */
  maxPlanCost?: number;
}

/** The transaction was ended from outside: by the watchdog (`timeout`) or because the client went away (`cancelled`). */
export class StatementEndedError extends Error {
  override name = 'StatementEndedError';
  constructor(
    readonly reason: 'timeout' | 'cancelled',
    options: { cause: unknown },
  ) {
    super(reason === 'timeout' ? 'the statement ran past its timeout and was ended' : 'the statement was cancelled', options);
  }
}

/**
 * A server's SqlDatabase: its pool, and cancel through pg_terminate_backend (a login may end its own
 * backends) on a connection of its own, as the pool may be full. Terminate, not cancel: a cancel
 * that arrives between two statements of the transaction (the DECLARE done, the FETCH not sent) is
 * lost and the FETCH runs on; the connection is dropped afterwards anyway.
 */
export function serverSqlDatabase(pool: pg.Pool, limits: Omit<SqlDatabase, 'connect' | 'cancel' | 'watchdog'>): SqlDatabase {
  return {
    ...limits,
    connect: () => pool.connect(),
    async cancel(client) {
      const pid = (client as pg.PoolClient & { processID?: number }).processID;
      const canceller = new pg.Client(pool.options);
      await canceller.connect();
      try {
        await canceller.query('SELECT pg_terminate_backend($1)', [pid]);
      } finally {
        await canceller.end();
      }
    },
    watchdog: false,
  };
}

/**
 * Runs `work` in a READ ONLY transaction that is always rolled back, with a statement timeout, the
 * allow-listed search_path and, when set, the reader role, all transaction-local: the connection
 * goes back to the pool as it came. When `signal` aborts (the client went away), the running
 * statement is cancelled; where the database has no timeout of its own, so is a transaction that
 * runs past statementTimeoutMs. Either way `work`'s failure becomes a StatementEndedError.
 */
export async function inReadOnlyTransaction<T>(
  db: SqlDatabase,
  work: (client: pg.PoolClient) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const client = await db.connect();
  let broken: Error | undefined;
  const onConnectionError = (err: Error) => {
    broken = err;
  };
  client.on('error', onConnectionError);
  let ended: StatementEndedError['reason'] | undefined;
  const end = (reason: StatementEndedError['reason']) => {
    if (ended) return;
    ended = reason;
    // A failed cancel leaves the statement to statement_timeout (a server) or to the next restart.
    db.cancel(client).catch(() => {});
  };
  const watchdog = db.watchdog ? setTimeout(() => end('timeout'), db.statementTimeoutMs) : undefined;
  const onAbort = () => end('cancelled');
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    // Gone before anything ran: nothing to cancel, and nothing to run.
    if (signal?.aborted) throw new StatementEndedError('cancelled', { cause: signal.reason });
    await client.query('BEGIN READ ONLY');
    await client.query("SELECT set_config('statement_timeout', $1, true), set_config('search_path', $2, true)", [
      String(db.statementTimeoutMs),
      db.schemas.map((schema) => pg.escapeIdentifier(schema)).join(', '),
    ]);
    if (db.role) await client.query(`SET LOCAL ROLE ${pg.escapeIdentifier(db.role)}`);
    return await work(client);
  } catch (err) {
    if (ended && !(err instanceof StatementEndedError)) throw new StatementEndedError(ended, { cause: err });
    throw err;
  } finally {
    clearTimeout(watchdog);
    signal?.removeEventListener('abort', onAbort);
    await client.query('ROLLBACK').catch((err: Error) => {
      broken = err;
    });
    client.removeListener('error', onConnectionError);
    // Ended: the connection is dropped, not reused, so that a cancel arriving late cannot reach the
    // next transaction on it (and a killed engine's connection is gone anyway).
    client.release(broken ?? (ended ? new StatementEndedError(ended, { cause: undefined }) : undefined));
  }
}
