import pg from 'pg';
import { type AnnIndexState, maintainAnnIndexes } from './ann-index-upkeep.js';
import { citusCheck, citusScopePrelude, localShardsCheck, queryCitusScoped } from './citus-scope.js';
import { withClient } from './client-checkout.js';
import { coalescedReclaim } from './coalesced-reclaim.js';
import { reclaimErasedRows } from './erased-rows-reclaim.js';
import type { Queryable, TransactionalQueryable } from './repositories/queryable.js';
import { type GenericPlanConfig, queryScoped, type ScopeValues, scopeLiterals } from './scoped-statement.js';
import { appendOnUserShard, queryOnUserShard, type UserShardAppend, userShardAppendCheck, userShardCallCheck } from './user-shard-call.js';
import { RECLAIMED_AFTER_ERASURE, type UserTable } from './user-tables.js';

/** Whose rows a statement acts on: the caller of a request, or the subject of a job. */
export interface RowOwner {
  tenantId: string;
  userId: string;
  /** The token carries the admin role: widens only the GDPR audit rows it may read (its tenant's). */
  tenantAdmin?: boolean;
}

/**
 * The only way the service's code reaches its tables (docs/row-level-security.md). Each statement runs
 * in its own transaction that first takes the role and the identity the row-level security policies
 * of migration 005 check, so a statement that forgets its WHERE clause still sees one user's rows.
 */
export interface ScopedDatabase {
  /** Statements that act for one user: they read and write that user's rows only. */
  asUser(owner: RowOwner): TransactionalQueryable;
  /** Statements of jobs that work across users: retention cleanup, re-embedding, job bookkeeping. */
  asMaintenance(): Queryable;
  /**
   * After an erase: frees the space of the deleted rows in `tables` with a plain VACUUM per table, so
   * no query, index or statistic reaches them any more (docs/gdpr-storage.md says where their bytes can remain). Requests within one window share
   * one run (db/coalesced-reclaim.ts); this resolves when the run that covers them finished.
   */
  reclaimErasedRows(tables: readonly UserTable[]): Promise<void>;
  /** Builds again the approximate indexes whose lists are out of step with their rows (db/ann-index-upkeep.ts). */
  maintainAnnIndexes(): Promise<AnnIndexState[]>;
}

export interface ScopedDatabaseOptions {
  /**
   * After an erase, also purge the erased tables' column statistics and retire the WAL that held the
   * rows (db/erased-rows-reclaim.ts): for the embedded database, which has no autovacuum to do it.
   */
  purgeStatisticsAndWal?: boolean;
  /** Rewrite the erased tables (VACUUM FULL) instead of a plain VACUUM: ERASE_RECLAIM=rewrite, embedded only. */
  rewriteErasedTables?: boolean;
  /**
   * Build indexes with plain CREATE INDEX, not CONCURRENTLY: for the embedded database, whose one
   * connection serves nothing else meanwhile anyway.
   */
  blockingIndexBuilds?: boolean;
  /** How long the reclaim after an erase waits for other erasures to join it (ERASE_RECLAIM_WINDOW). */
  reclaimWindowMs?: number;
}

/**
 * The tables to reclaim, in the list's order, names from RECLAIMED_AFTER_ERASURE only, never from input;
 * an export's parts go with their export, the feedback on pairs with its turns (their rows are deleted by its cascade).
 */
function reclaimedTables(tables: readonly UserTable[]): UserTable[] {
  const wanted = new Set<UserTable>(tables);
  if (tables.includes('gdpr_exports')) wanted.add('gdpr_export_parts');
  if (tables.includes('turns')) wanted.add('verified_pair_feedback');
  return RECLAIMED_AFTER_ERASURE.filter((table) => wanted.has(table));
}

export function scopedDatabase(pool: pg.Pool, options: ScopedDatabaseOptions = {}): ScopedDatabase {
  const onCitus = citusCheck(pool);
  const localShards = localShardsCheck(pool);
  const citus = {
    check: onCitus,
    prelude: async (scope: ScopeValues) => ((await onCitus()) ? citusScopePrelude(scope, await localShards()) : undefined),
  };
  const userShardCall = userShardCallCheck(pool);
  const userShardAppend = userShardAppendCheck(pool);
  const onUserShard = {
    calls: async () => (await onCitus()) && userShardCall(),
    appends: async () => (await onCitus()) && userShardAppend(),
  };
  const maintenance = scopedRunner(pool, ['memorychat_maintenance', '', '', 'off'], citus);
  return {
    asUser: (owner) =>
      scopedRunner(pool, ['memorychat_app', owner.tenantId, owner.userId, owner.tenantAdmin ? 'on' : 'off'], citus, onUserShard),
    asMaintenance: () => maintenance,
    maintainAnnIndexes: () => maintainAnnIndexes({ pool, maintenance, onCitus, blocking: options.blockingIndexBuilds ?? false }),
    reclaimErasedRows: coalescedReclaim(
      (tables) =>
        reclaimErasedRows(pool, reclaimedTables(tables), {
          purgeStatisticsAndWal: options.purgeStatisticsAndWal ?? false,
          rewrite: options.rewriteErasedTables ?? false,
        }),
      options.reclaimWindowMs ?? 0,
    ),
  };
}

/**
 * A single statement runs with its scope in one round trip (db/scoped-statement.ts); a transaction
 * opens with `BEGIN` and the scope in one. Either way the settings are `SET LOCAL`: the scope ends
 * with the transaction, so a pooled connection never carries one user's identity into the next
 * statement. Auth refuses ids with NUL, which no Postgres text value can carry. On a Citus
 * coordinator every statement runs in a transaction block whose scope reaches the workers
 * (db/citus-scope.ts): a single statement goes with its `BEGIN`, scope and `COMMIT` in one round trip,
 * and a transaction's scope goes with its first statement; a single statement of the user's rows
 * marked `onUserShard`, and an append outside a transaction, go instead as a call that runs on their
 * shards' worker (db/user-shard-call.ts).
 */
function scopedRunner(
  pool: pg.Pool,
  scope: ScopeValues,
  citus: { check: () => Promise<boolean>; prelude: (scope: ScopeValues) => Promise<string[] | undefined> },
  onUserShard?: { calls: () => Promise<boolean>; appends: () => Promise<boolean> },
): TransactionalQueryable {
  const transaction = async <T>(work: (tx: Queryable) => Promise<T>): Promise<T> => {
    const prelude = await citus.prelude(scope);
    return withClient(pool, async (client, markBroken) => {
      if (!prelude) await client.query(scopeLiterals(scope));
      let opened = !prelude;
      const query = (statement: string | pg.QueryConfig, values?: unknown[]) => {
        if (opened || !prelude) return client.query(statement, values);
        opened = true;
        return queryCitusScoped(client, prelude, false, statement, values);
      };
      try {
        const result = await work({ query, isDistributed: citus.check });
        if (opened) await client.query('COMMIT');
        return result;
      } catch (err) {
        if (opened) await client.query('ROLLBACK').catch(markBroken);
        throw err;
      }
    });
  };
  return {
    query: async <R extends pg.QueryResultRow>(statement: string | pg.QueryConfig, values?: unknown[]) => {
      const prelude = await citus.prelude(scope);
      const shardStatement =
        prelude && typeof statement !== 'string' && (statement as GenericPlanConfig).onUserShard && (await onUserShard?.calls())
          ? { ...statement, values: values ?? statement.values }
          : undefined;
      return withClient(pool, async (client, markBroken) => {
        let block = false;
        try {
          const onShard = shardStatement && (await queryOnUserShard<R>(client, scope, shardStatement));
          if (onShard) return onShard;
          block = prelude !== undefined;
          if (prelude) return await queryCitusScoped<R>(client, prelude, true, statement, values);
          return await queryScoped<R>(client, scope, statement, values);
        } catch (err) {
          // On a server, or for a call on the user's shard, the database refused the statement and
          // rolled it back; on Citus the block its BEGIN opened may still be open, aborted. Any other
          // failure (a dropped connection, a read timeout) leaves the connection in an unknown state.
          if (block && err instanceof pg.DatabaseError) await client.query('ROLLBACK').catch(markBroken);
          else if (!(err instanceof pg.DatabaseError)) markBroken(err as Error);
          throw err;
        }
      });
    },
    transaction,
    isDistributed: citus.check,
    appendOnUserShard: async (append: () => UserShardAppend) => {
      if (!(await onUserShard?.appends())) return undefined;
      return withClient(pool, async (client, markBroken) => {
        try {
          return await appendOnUserShard(client, scope, append());
        } catch (err) {
          // The database refused the call and rolled it back (no transaction block); any other failure
          // leaves the connection in an unknown state.
          if (!(err instanceof pg.DatabaseError)) markBroken(err as Error);
          throw err;
        }
      });
    },
  };
}
