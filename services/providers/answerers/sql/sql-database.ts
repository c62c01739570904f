import pg from 'pg';

/** Where the sql answerer's statements run, and under which limits (docs/design.md §5). */
export interface SqlDatabase {
  pool: pg.Pool;
  /**
   * The role every statement takes for its transaction. embedded-demo: a role that reads the demo
   * schema only, because the embedded login is the superuser that owns the memory tables too.
   * Unset: the login of SQL_DATABASE_URL, whose own grants bound what the SQL can read.
   */
  role?: string;
  /** The allow-listed schemas: the LLM sees these, and unqualified names resolve in them. */
  schemas: string[];
  statementTimeoutMs: number;
  /** A query the planner estimates above this is not run. */
  maxPlanCost?: number;
}

/**
 * Runs `work` in a READ ONLY transaction that is always rolled back, with a statement timeout, the
 * allow-listed search_path and, when set, the reader role, all transaction-local: the connection
 * goes back to the pool as it came, which matters on the embedded database, whose one connection
 * (db/pool.ts) also serves every memory statement. Those statements wait for the pool meanwhile.
 */
export async function inReadOnlyTransaction<T>(db: SqlDatabase, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  let broken: Error | undefined;
  const onConnectionError = (err: Error) => {
    broken = err;
  };
  client.on('error', onConnectionError);
  try {
    await client.query('BEGIN READ ONLY');
    await client.query("SELECT set_config('statement_timeout', $1, true), set_config('search_path', $2, true)", [
      String(db.statementTimeoutMs),
      db.schemas.map((schema) => pg.escapeIdentifier(schema)).join(', '),
    ]);
    if (db.role) await client.query(`SET LOCAL ROLE ${pg.escapeIdentifier(db.role)}`);
    return await work(client);
  } finally {
    await client.query('ROLLBACK').catch((err: Error) => {
      broken = err;
    });
    client.removeListener('error', onConnectionError);
    client.release(broken);
  }
}
