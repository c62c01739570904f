import pg from 'pg';
import { type Connection, PipelinedStatement, parseOnce, queryConfig, type ScopeValues, submit } from './scoped-statement.js';

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
 *
 * `customPlans` where the node holds shards itself (localShardsCheck): there Citus runs a statement on
 * its own shard locally, and a prepared statement's generic plan made Citus 13.2.1 and 13.2.2 plan the
 * shard query again on every call and keep each plan, without bound (docs/scaling.md#one-hop-per-statement);
 * a custom plan is used once and cached nowhere.
 */
export function citusScopePrelude(scope: ScopeValues, customPlans = false): string[] {
  const [role, tenantId, userId, tenantAdmin] = scope.map((v) => pg.escapeLiteral(v));
  return [
    'BEGIN',
    `SET LOCAL citus.propagate_set_commands = 'local'`,
    `SET LOCAL role = ${role}`,
    `SET LOCAL memorychat.tenant_id = ${tenantId}`,
    `SET LOCAL memorychat.user_id = ${userId}`,
    `SET LOCAL memorychat.tenant_admin = ${tenantAdmin}`,
    'SET LOCAL jit = off',
    ...(customPlans ? ['SET LOCAL plan_cache_mode = force_custom_plan'] : []),
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
class CitusScopedStatement extends PipelinedStatement {
  constructor(
    private readonly prelude: string[],
    private readonly commit: boolean,
    config: pg.QueryConfig,
    callback: (err: Error | null, result: pg.QueryResult) => void,
  ) {
    super(prelude.length, config, callback);
  }

  protected sendBefore(connection: Connection) {
    for (const text of this.prelude) sendUnnamed(connection, text);
  }

  protected override sendAfter(connection: Connection) {
    if (this.commit) sendUnnamed(connection, 'COMMIT');
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
export async function queryCitusScoped<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  prelude: string[],
  commit: boolean,
  statement: string | pg.QueryConfig,
  values?: unknown[],
): Promise<pg.QueryResult<R>> {
  const config = queryConfig(statement, values);
  // Prepared on its own the first time on this connection (one round trip, once): a coordinator
  // plans an unnamed statement on every call, which cost more than the two round trips saved
  // (docs/performance.md, "On a Citus cluster").
  if (config.name) await parseOnce(client, { name: config.name, text: config.text });
  return submit<pg.QueryResult<R>>(client, (callback) => new CitusScopedStatement(prelude, commit, config, callback));
}

/**
 * Whether the pool's database has the citus extension (a coordinator), asked once; a failed check
 * (the database not reachable yet) is asked again by the next statement.
 */
export function citusCheck(pool: pg.Pool): () => Promise<boolean> {
  return askedOnce(pool, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS yes`);
}

/**
 * Whether the coordinator the pool reaches holds shards of distributed tables itself, or may be given
 * some (`shouldhaveshards`: a single-node cluster), asked once. Reference tables' copies do not count:
 * Citus plans a statement on one once, at its preparation.
 */
export function localShardsCheck(pool: pg.Pool): () => Promise<boolean> {
  return askedOnce(
    pool,
    `SELECT EXISTS (SELECT 1 FROM pg_dist_node n JOIN pg_dist_local_group l ON l.groupid = n.groupid WHERE n.shouldhaveshards)
         OR EXISTS (SELECT 1 FROM pg_dist_placement p JOIN pg_dist_local_group l ON l.groupid = p.groupid
                    JOIN pg_dist_shard s ON s.shardid = p.shardid JOIN pg_dist_partition t ON t.logicalrelid = s.logicalrelid
                    WHERE t.partmethod = 'h') AS yes`,
  );
}

/** A yes-or-no fact of the database (`statement` selects it as `yes`), asked once; a failed ask is asked again. */
export function askedOnce(pool: pg.Pool, statement: string): () => Promise<boolean> {
  let answer: Promise<boolean> | undefined;
  return () => {
    answer ??= pool
      .query<{ yes: boolean }>(statement)
      .then((result) => result.rows[0]!.yes)
      .catch((err: unknown) => {
        answer = undefined;
        throw err;
      });
    return answer;
  };
}
