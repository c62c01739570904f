import { type SqlFragment, sql, toQuery } from '../sql.js';
import type { Queryable, TransactionalQueryable } from './queryable.js';

/**
 * A write guarded by the erasure barrier (migration 011): `notErased` is the barrier's call, and
 * `write` gets the condition to put in its statement's WHERE clause. On a single server that
 * condition is the barrier itself, so the write stays one statement. Citus refuses a VOLATILE
 * function in the WHERE clause of a distributed write, so there the barrier runs first, as its own
 * statement in the write's transaction, on the coordinator (where the erase job takes the same
 * advisory lock): it holds the lock until the write commits, and the write, a later statement,
 * reads with a snapshot taken after it.
 */
export async function withEraseBarrier<T>(
  db: Queryable,
  notErased: SqlFragment,
  write: (tx: Queryable, condition: SqlFragment) => Promise<T>,
): Promise<T> {
  if (!(await db.isDistributed?.())) return write(db, notErased);
  const guarded = async (tx: Queryable) => {
    await tx.query(toQuery(sql`SELECT ${notErased}`));
    return write(tx, sql`TRUE`);
  };
  const transactional = db as Partial<TransactionalQueryable>;
  return transactional.transaction ? transactional.transaction(guarded) : guarded(db);
}
