import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { GenericPlanConfig } from '../scoped-statement.js';
import { type SqlFragment, shapeOf, toQuery } from '../sql.js';
import type { AppendedOnUserShard, UserShardAppend } from '../user-shard-call.js';

/**
 * What repositories run their statements on: in the service, a scope of db/row-security.ts; in tests
 * and scripts that inspect or seed the database, also a plain pool.
 */
export interface Queryable {
  // biome-ignore lint/suspicious/noExplicitAny: pg's own default row type, so callers without a row type get pg's rows
  query<R extends pg.QueryResultRow = any>(statement: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult<R>>;
  /** True on a Citus coordinator (db/citus-scope.ts), where a few statements take another form; absent: a single server. */
  isDistributed?(): Promise<boolean>;
  /**
   * The append as one call on the worker holding the user's shards (db/user-shard-call.ts): where
   * Citus delegates it, outside a transaction; `append` is built only then. Absent, or resolving
   * undefined: append as the statements.
   */
  appendOnUserShard?(append: () => UserShardAppend): Promise<AppendedOnUserShard | null | undefined>;
}

/** A scope that can also run several statements as one transaction (db/row-security.ts). */
export interface TransactionalQueryable extends Queryable {
  /**
   * Runs `work` in one transaction under the scope: committed when it resolves, rolled back when it
   * throws. `work` must use only `tx`: on the embedded database a second connection never comes.
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
}

const statementsByShape = new Map<string, { name: string; text: string }>();

/**
 * A named (server-side prepared) statement, named after its text: Postgres parses and plans the
 * hot statements once per connection instead of on every call, which halved the database time per
 * turn in scripts/bench (docs/performance.md). The text and its name are built once per shape of the
 * fragment (shapeOf), not on every call.
 */
export function prepared(statement: SqlFragment, options: { genericPlan?: boolean; onUserShard?: boolean } = {}): GenericPlanConfig {
  const { key, values } = shapeOf(statement);
  let built = statementsByShape.get(key);
  if (!built) {
    const { text } = toQuery(statement);
    built = { name: `mc_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`, text };
    statementsByShape.set(key, built);
  }
  return {
    name: built.name,
    text: built.text,
    values,
    ...(options.genericPlan ? { genericPlan: true } : {}),
    ...(options.onUserShard ? { onUserShard: true } : {}),
  };
}
