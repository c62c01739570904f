import pg from 'pg';

/**
 * The scope a statement runs under: the role and the identity the row-level security policies of
 * migration 005 check. One prepared statement for every scope, so Postgres parses it once per connection.
 * JIT compilation is off for the service's statements: they read a few rows each, but a heavy user's
 * retrieval is estimated costly enough that a server with JIT on (the default where built with LLVM)
 * compiled it on every call, 250-400 ms against 17 ms without (docs/performance.md).
 */
const SCOPE_STATEMENT = {
  name: 'mc_scope',
  text:
    "SELECT set_config('role', $1, true), set_config('memorychat.tenant_id', $2, true), " +
    "set_config('memorychat.user_id', $3, true), set_config('memorychat.tenant_admin', $4, true), set_config('jit', 'off', true), " +
    "set_config('plan_cache_mode', coalesce($5, current_setting('plan_cache_mode')), true)",
};

/**
 * A prepared statement (repositories/queryable.ts, prepared) that runs with its generic plan from its
 * first call: Postgres otherwise plans the first five calls for their values, and then keeps doing so
 * whenever the generic plan's estimate is the costlier, as it was for a 100,000-turn user's retrieval
 * (2.4 ms of planning on each call, for a plan that ran no faster than the generic one: docs/performance.md).
 * Where a statement's values change its best plan (another user's history), leave it to Postgres.
 */
export interface GenericPlanConfig extends pg.QueryConfig {
  genericPlan?: boolean;
  /**
   * A statement of the scope's user's rows only, every table it names co-located with `sessions` or a
   * reference table: on Citus it runs on the worker holding the user's shards (db/user-shard-call.ts).
   */
  onUserShard?: boolean;
  /** Named statements run under the same scope just before this one, in its round trip and transaction. */
  before?: BeforeStatement[];
}

/** A named statement that runs ahead of another (GenericPlanConfig.before); its values as pg sends them. */
export interface BeforeStatement {
  name: string;
  text: string;
  values: string[];
}

/** [role, tenant id, user id, 'on'|'off'] */
export type ScopeValues = [string, string, string, string];

/** pg's connection as a Submittable sees it: the protocol messages the scoped statements write. */
export interface Connection {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(config: { text: string; name?: string }): void;
  bind(config: { statement?: string; values?: (string | null)[] }): void;
  execute(config: { portal: string }): void;
  sync(): void;
}

// pg's Query is the Submittable that parses rows into a result; its declaration omits the protocol hooks.
export const PgQuery = (pg as unknown as { Query: new (config: pg.QueryConfig, values?: unknown[], callback?: unknown) => object }).Query;

/**
 * A statement sent behind `commandsAhead` other commands in one pipeline with a single Sync, so in one
 * round trip and one transaction: only the statement's own rows and completion are its result, not
 * the commands' before it or (sendAfter) after it. Always the extended protocol, even without
 * values: the simple protocol would send its own Sync.
 */
export abstract class PipelinedStatement extends PgQuery {
  private completions = 0;

  constructor(
    private readonly commandsAhead: number,
    config: pg.QueryConfig,
    callback: (err: Error | null, result: pg.QueryResult) => void,
  ) {
    super(config, undefined, callback);
  }

  /** The `commandsAhead` commands ahead of the statement. */
  protected abstract sendBefore(connection: Connection): void;

  /** Commands between the statement and the Sync. */
  protected sendAfter(_connection: Connection): void {}

  requiresPreparation() {
    return true;
  }

  prepare(connection: Connection) {
    this.sendBefore(connection);
    (PgQuery.prototype as { prepare(c: Connection): void }).prepare.call(this, connection);
  }

  // pg's last step of prepare(): the statement's Execute, then the Sync.
  _getRows(connection: Connection) {
    connection.execute({ portal: '' });
    this.sendAfter(connection);
    connection.sync();
  }

  handleDataRow(msg: unknown) {
    if (this.completions === this.commandsAhead) (PgQuery.prototype as { handleDataRow(m: unknown): void }).handleDataRow.call(this, msg);
  }

  handleCommandComplete(msg: unknown, connection: Connection) {
    if (this.completions++ === this.commandsAhead) {
      (PgQuery.prototype as { handleCommandComplete(m: unknown, c: Connection): void }).handleCommandComplete.call(this, msg, connection);
    }
  }
}

/** Parse of a named statement alone, then Sync: the statement is prepared on the connection, nothing runs. */
class ParseOnly extends PgQuery {
  /** Runs nothing: what records the statements sent (test/citus/single-shard-plans.test.ts) skips it. */
  readonly parseOnly = true;

  requiresPreparation() {
    return true;
  }

  prepare(connection: Connection) {
    const { name, text } = this as unknown as { name: string; text: string };
    connection.parse({ name, text });
    connection.sync();
  }
}

/** Prepares the named statement on the client's connection unless it is already (one round trip, once per connection). */
export async function parseOnce(client: pg.PoolClient, statement: { name: string; text: string }): Promise<void> {
  const connection = (client as unknown as { connection: Connection }).connection;
  if (connection.parsedStatements[statement.name] !== undefined) return;
  await submit(client, (callback) => new ParseOnly(statement, undefined, callback));
}

/** `statement` and `values` as one pg.QueryConfig (values given apart replace the config's). */
export function queryConfig(statement: string | pg.QueryConfig, values?: unknown[]): pg.QueryConfig {
  return typeof statement === 'string' ? { text: statement, values } : { ...statement, values: values ?? statement.values };
}

/** Runs a Submittable made with its callback on `client`, as client.query runs a statement. */
export function submit<R>(client: pg.PoolClient, make: (callback: (err: Error | null, result?: R) => void) => object): Promise<R> {
  return new Promise((resolve, reject) => {
    client.query(make((err, result) => (err ? reject(err) : resolve(result as R))) as unknown as pg.QueryConfig);
  });
}

/**
 * One statement under a scope in ONE round trip: Bind/Execute of the scope statement (and of the
 * statements `before` it), then the statement's own Parse/Bind/Describe/Execute, then a single Sync.
 * Messages before a Sync run in one implicit transaction, so the scope's `SET LOCAL` settings hold for the statement and end with it, as
 * `BEGIN; scope; statement; COMMIT` did in three round trips; a failure in either rolls both back.
 */
class ScopedStatement extends PipelinedStatement {
  constructor(
    private readonly scope: [...ScopeValues, string | null],
    readonly before: BeforeStatement[],
    config: pg.QueryConfig,
    callback: (err: Error | null, result: pg.QueryResult) => void,
  ) {
    super(1 + before.length, config, callback);
  }

  protected sendBefore(connection: Connection) {
    connection.bind({ statement: SCOPE_STATEMENT.name, values: this.scope });
    connection.execute({ portal: '' });
    for (const { name, values } of this.before) {
      connection.bind({ statement: name, values });
      connection.execute({ portal: '' });
    }
  }
}

/**
 * Runs `statement` on `client` under `scope` in one round trip, after its `before` statements. The
 * scope statement is prepared on the connection the first time it is used there, by running it alone:
 * outside a transaction its local settings end with that call; a `before` statement is prepared alone.
 */
export async function queryScoped<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  scope: ScopeValues,
  statement: string | pg.QueryConfig,
  values?: unknown[],
): Promise<pg.QueryResult<R>> {
  const connection = (client as unknown as { connection: Connection }).connection;
  if (connection.parsedStatements[SCOPE_STATEMENT.name] === undefined) {
    await client.query({ ...SCOPE_STATEMENT, values: [...scope, null] });
  }
  const config = queryConfig(statement, values) as GenericPlanConfig;
  const before = config.before ?? [];
  for (const named of before) await parseOnce(client, named);
  const planCacheMode = config.genericPlan ? 'force_generic_plan' : null;
  return submit<pg.QueryResult<R>>(client, (callback) => new ScopedStatement([...scope, planCacheMode], before, config, callback));
}

/**
 * The scope as the `BEGIN` of a multi-statement transaction sets it (simple protocol: literals), JIT
 * off as for a single statement (SCOPE_STATEMENT) and on Citus (citus-scope.ts).
 */
export function scopeLiterals(scope: ScopeValues): string {
  const [role, tenantId, userId, tenantAdmin] = scope.map((v) => pg.escapeLiteral(v));
  return (
    `BEGIN; SELECT set_config('role', ${role}, true), set_config('memorychat.tenant_id', ${tenantId}, true), ` +
    `set_config('memorychat.user_id', ${userId}, true), set_config('memorychat.tenant_admin', ${tenantAdmin}, true), ` +
    `set_config('jit', 'off', true)`
  );
}
