import pg from 'pg';
import type { Queryable } from './queryable.js';

/** A condition naming one user by value (`AND tenant = '…' AND user = '…'`), or '' for every user. */
export type UserFilter = (tenantColumn: string, userColumn: string) => string;

/**
 * Runs a batched `FOR UPDATE SKIP LOCKED` statement over up to `limit` rows of many users. On a single
 * server: once, for every user. Citus refuses `FOR UPDATE` in a statement that reads many shards, so
 * there the users with work are read first (`usersWithWork`, no lock, `$1..` = `usersValues`), then
 * the statement runs per user, routed to that user's shard, until `limit` rows are done. The user is
 * written as literals: with bind parameters Citus planned the statement for every shard, each with its
 * own LIMIT, and did more than the batch. `run` returns how many rows it did.
 */
export async function inUserBatches(
  db: Queryable,
  limit: number,
  usersWithWork: string,
  usersValues: unknown[],
  run: (byUser: UserFilter, remaining: number) => Promise<number>,
): Promise<number> {
  if (!(await db.isDistributed?.())) return run(() => '', limit);
  const { rows: users } = await db.query<{ tenant_id: string; user_id: string }>(usersWithWork, usersValues);
  let done = 0;
  for (const { tenant_id, user_id } of users) {
    if (done >= limit) break;
    done += await run(
      (tenant, user) => `AND ${tenant} = ${pg.escapeLiteral(tenant_id)} AND ${user} = ${pg.escapeLiteral(user_id)}`,
      limit - done,
    );
  }
  return done;
}
