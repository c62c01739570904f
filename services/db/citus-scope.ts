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
 * rolls it back. The statement goes unnamed: pg records a named statement as parsed at the first
 * ParseComplete of the query, which here would be the scope's, so a statement the server never parsed
 * could be taken for prepared on the connection.
 */
class CitusScopedStatement extends PgQuery {
  private completions = 0;

  constructor(
    private readonly prelude: string[],
    private readonly commit: boolean,
    config: pg.QueryConfig,
    callback: (err: Error | null, result: pg.QueryResult) => void,
  ) {
    super({ ...config, name: undefined }, undefined, callback);
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
  return new Promise((resolve, reject) => {
    client.query(
      new CitusScopedStatement(prelude, commit, config, (err, result) =>
        err ? reject(err) : resolve(result as pg.QueryResult<R>),
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
