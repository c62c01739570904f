import pg from 'pg';
import { type Connection, PgQuery, type ScopeValues } from './scoped-statement.js';

/**
 * How a scope reaches the workers of a Citus cluster (docs/scaling.md#row-level-security-on-citus).
 * Citus runs a statement's shard queries on the workers over connections of its own, opened as the
 * current role; the settings the row-level security policies read must be there too. Citus sends
 * `SET LOCAL` commands of a transaction block to its workers when `citus.propagate_set_commands` is
 * 'local', and never a `set_config(…, true)`: so on Citus the scope is a `BEGIN` followed by `SET LOCAL`
 * commands. The propagation setting comes first and is not itself sent. `SET` takes no bind
 * parameters: the values are quoted literals, as in scopeLiterals (auth refuses ids with NUL).
 *
 * Each command is a query text of its own: Citus sends a propagated `SET`'s whole query text to the
 * workers, so one "BEGIN; SET LOCAL …; SET LOCAL …" string made every worker run all of it again, its
 * `BEGIN` included, once per propagated command (five "there is already a transaction in progress"
 * warnings in the worker's log for every statement).
 */
export function citusScopePrelude(scope: ScopeValues): string[] {
  const [role, tenantId, userId, tenantAdmin] = scope.map((v) => pg.escapeLiteral(v));
  return [
    'BEGIN',
    `SET LOCAL citus.propagate_set_commands = 'local'`,
    `SET LOCAL role = ${role}`,
    `SET LOCAL memorychat.tenant_id = ${tenantId}`,
    `SET LOCAL memorychat.user_id = ${userId}`,
    `SET LOCAL memorychat.tenant_admin = ${tenantAdmin}`,
    'SET LOCAL jit = off',
  ];
}

/**
 * A statement after the scope's commands, and with `commit` a `COMMIT` after it, in ONE round trip:
 * each command's Parse/Bind/Execute, then the statement's, then a single Sync. On an error the server
 * skips the rest up to the Sync; the transaction block, if `BEGIN` ran, is then aborted and the caller
 * rolls it back. A named statement is already parsed on the connection when it comes here
 * (queryCitusScoped): pg records a named statement as parsed at the first ParseComplete of its query,
 * which here would be a scope command's.
 */
class CitusScopedStatement extends PgQuery {
  private completions = 0;

  constructor(
    private readonly prelude: string[],
    private readonly commit: boolean,
    config: pg.QueryConfig,
    callback: (err: Error | null, result: pg.QueryResult) => void,
  ) {
    super(config, undefined, callback);
  }

  requiresPreparation() {
    return true;
  }

  prepare(connection: Connection) {
    for (const text of this.prelude) sendUnnamed(connection, text);
    (PgQuery.prototype as { prepare(c: Connection): void }).prepare.call(this, connection);
  }

  // pg's last step of prepare(): the statement's Execute, then the Sync; the COMMIT goes between.
  _getRows(connection: Connection) {
    connection.execute({ portal: '' });
    if (this.commit) sendUnnamed(connection, 'COMMIT');
    connection.sync();
  }

  // Only the statement's rows and completion are its result, not the scope's or the COMMIT's.
  handleDataRow(msg: unknown) {
    if (this.completions === this.prelude.length) (PgQuery.prototype as { handleDataRow(m: unknown): void }).handleDataRow.call(this, msg);
  }

  handleCommandComplete(msg: unknown, connection: Connection) {
    if (this.completions++ === this.prelude.length) {
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

function sendUnnamed(connection: Connection, text: string) {
  connection.parse({ text });
  connection.bind({});
  connection.execute({ portal: '' });
}

/**
 * Runs `statement` on `client` after `prelude` (citusScopePrelude) in one round trip, and with
 * `commit` ends the transaction in it too. After a failure the transaction block may be open and
 * aborted: the caller rolls back.
 */
export function queryCitusScoped<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  prelude: string[],
  commit: boolean,
  statement: string | pg.QueryConfig,
  values?: unknown[],
): Promise<pg.QueryResult<R>> {
  const config: pg.QueryConfig =
    typeof statement === 'string' ? { text: statement, values } : { ...statement, values: values ?? statement.values };
  const connection = (client as unknown as { connection: Connection }).connection;
  // Prepared on its own the first time on this connection (one round trip, once): a coordinator
  // plans an unnamed statement on every call, which cost more than the two round trips saved
  // (docs/performance.md, "On a Citus cluster").
  const parsed = !config.name || connection.parsedStatements[config.name] !== undefined;
  return (parsed ? Promise.resolve() : parseOnly(client, config)).then(
    () =>
      new Promise((resolve, reject) => {
        client.query(
          new CitusScopedStatement(prelude, commit, config, (err, result) =>
            err ? reject(err) : resolve(result as pg.QueryResult<R>),
          ) as unknown as pg.QueryConfig,
        );
      }),
  );
}

function parseOnly(client: pg.PoolClient, config: pg.QueryConfig): Promise<void> {
  return new Promise((resolve, reject) => {
    client.query(
      new ParseOnly({ name: config.name, text: config.text }, undefined, (err: Error | null) =>
        err ? reject(err) : resolve(),
      ) as unknown as pg.QueryConfig,
    );
  });
}

/**
 * Whether the pool's database has the citus extension (a coordinator), asked once; a failed check
 * (the database not reachable yet) is asked again by the next statement.
 */
export function citusCheck(pool: pg.Pool): () => Promise<boolean> {
  let answer: Promise<boolean> | undefined;
  return () => {
    answer ??= pool
      .query<{ citus: boolean }>(`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus`)
      .then((result) => result.rows[0]!.citus)
      .catch((err: unknown) => {
        answer = undefined;
        throw err;
      });
    return answer;
  };
}
