import pg from 'pg';
import utils from 'pg/lib/utils.js';
import { askedOnce } from './citus-scope.js';
import { type BeforeStatement, type GenericPlanConfig, queryConfig, queryScoped, type ScopeValues } from './scoped-statement.js';

/**
 * One statement of one user's rows on a Citus cluster, run where the user's shards are, planned there
 * once per connection (migration 024, docs/scaling.md#one-hop-per-statement). The statement goes as
 * the arguments of `memorychat_on_user_shard`, a function distributed by its user argument: Citus
 * delegates its call to the worker holding that user's shards, so the coordinator plans a call, not the
 * statement, and the worker runs the statement as a prepared statement on the shards.
 *
 * The call runs under the scope as on a single server (db/scoped-statement.ts): in one round trip, in
 * no transaction block (Citus delegates no call inside one), with the role set, which Citus opens its
 * connection to the worker as; the function sets the identity there, where the shards' row-level
 * security policies read it.
 */
const CALL = {
  name: 'mc_on_user_shard',
  text: 'SELECT memorychat_on_user_shard($1, $2, $3, $4, $5, $6, $7::text[], $8, $9) AS row',
};

/**
 * The statement's values as the call's: each in the text form pg would send it, but for a vector,
 * which pg sends in binary (db/vector-param.ts): the one Buffer goes as the call's vector argument.
 */
function callValues(values: unknown[]): { params: (string | null)[]; vectorAt: number; vector: Buffer | null } | undefined {
  let vectorAt = 0;
  let vector: Buffer | null = null;
  const params: (string | null)[] = [];
  for (const [i, value] of values.entries()) {
    if (Buffer.isBuffer(value)) {
      if (vector) return undefined;
      vector = value;
      vectorAt = i + 1;
      params.push(null);
    } else params.push(utils.prepareValue(value) as string | null);
  }
  return { params, vectorAt, vector };
}

/**
 * Runs `statement` (named) for the scope's user on the worker holding their shards, in one round
 * trip. Its rows come back as the statement's own. Undefined when the statement's values do not fit
 * the call (more than one vector); the caller then sends it as it is.
 */
export async function queryOnUserShard<R extends pg.QueryResultRow>(
  client: pg.PoolClient,
  scope: ScopeValues,
  statement: GenericPlanConfig,
): Promise<pg.QueryResult<R> | undefined> {
  const config = queryConfig(statement) as GenericPlanConfig;
  const values = callValues(config.values ?? []);
  if (!config.name || !values) return undefined;
  const [, tenantId, userId, tenantAdmin] = scope;
  const result = await queryScoped<{ row: R }>(client, scope, {
    ...CALL,
    values: [
      userId,
      tenantId,
      tenantAdmin,
      // The plan cache mode is the worker's: on the coordinator a generic plan would not be delegated.
      config.genericPlan ? 'force_generic_plan' : null,
      config.name,
      config.text,
      values.params,
      values.vectorAt,
      values.vector,
    ],
  });
  return { ...result, rows: result.rows.map((r) => r.row) } as pg.QueryResult<R>;
}

/**
 * The append of one turn as one call of `memorychat_append_on_user_shard` (migration 026), delegated to
 * the worker holding the user's shards: the session statement, then the turn statement (its first
 * parameter the turn number the session row gives), then `mark` if any, in the call's one transaction
 * there. `barrier` runs first, on the coordinator, in the same round trip and transaction: the erasure
 * barrier's lock, held until the worker has committed. The statements name the distributed tables.
 */
export interface UserShardAppend {
  session: pg.QueryConfig;
  turn: pg.QueryConfig;
  mark?: pg.QueryConfig;
  barrier: BeforeStatement;
}

const APPEND_CALL = {
  name: 'mc_append_on_user_shard',
  text: 'SELECT memorychat_append_on_user_shard($1, $2, $3, $4, $5, $6::text[], $7, $8, $9::text[], $10, $11, $12, $13, $14::text[]) AS appended',
};

/** What memorychat_append_on_user_shard raises where the user's shards are not (or no longer) on its node. */
const NOT_ON_USER_SHARD = 'ME002';

/** The delegated append was refused because the user's shards are not on the worker it ran on (a shard move's switch-over). */
export function isNotOnUserShard(err: unknown): boolean {
  return err instanceof pg.DatabaseError && err.code === NOT_ON_USER_SHARD;
}

/** The session row (with last_turn_number) and the turn's number, as the delegated append returns them. */
export interface AppendedOnUserShard {
  session: Record<string, unknown> & { last_turn_number: number };
  turn_number: number;
}

/**
 * Runs `append` for the scope's user as one call on the worker holding their shards, in one round trip
 * with its barrier. Null when the session statement touched no row; undefined when a statement does not
 * fit the call (unnamed, or a vector outside the turn statement): the caller then appends as before.
 */
export async function appendOnUserShard(
  client: pg.PoolClient,
  scope: ScopeValues,
  append: UserShardAppend,
): Promise<AppendedOnUserShard | null | undefined> {
  const call = appendCall(scope, append);
  if (!call) return undefined;
  const { rows } = await queryScoped<{ appended: AppendedOnUserShard | null }>(client, scope, call);
  return rows[0]!.appended;
}

/** A named statement's name, text and values as the call's arguments; undefined if it is unnamed or has more than one vector. */
function callStatement(statement: pg.QueryConfig) {
  const values = callValues(statement.values ?? []);
  return statement.name && values ? { name: statement.name, text: statement.text, ...values } : undefined;
}

function appendCall(scope: ScopeValues, append: UserShardAppend): GenericPlanConfig | undefined {
  const session = callStatement(append.session);
  const turn = callStatement(append.turn);
  const mark = append.mark && callStatement(append.mark);
  if (!session || !turn || (append.mark && !mark) || session.vector || mark?.vector) return undefined;
  const [, tenantId, userId, tenantAdmin] = scope;
  return {
    ...APPEND_CALL,
    values: [
      userId,
      tenantId,
      tenantAdmin,
      session.name,
      session.text,
      session.params,
      turn.name,
      turn.text,
      turn.params,
      turn.vectorAt,
      turn.vector,
      mark?.name ?? null,
      mark?.text ?? null,
      mark?.params ?? null,
    ],
    before: [append.barrier],
  };
}

/**
 * Whether the pool's database has memorychat_on_user_shard distributed by its user argument (a Citus
 * coordinator past migration 024, or a database moved to Citus past scripts/citus/distribute-functions.sql),
 * asked once; a failed check is asked again by the next statement.
 */
export function userShardCallCheck(pool: pg.Pool): () => Promise<boolean> {
  return distributedByUser(pool, 'memorychat_on_user_shard(text,text,text,text,text,text,text[],integer,vector)');
}

/** Whether the pool's database has memorychat_append_on_user_shard distributed by its user argument (migration 026), asked once. */
export function userShardAppendCheck(pool: pg.Pool): () => Promise<boolean> {
  return distributedByUser(
    pool,
    'memorychat_append_on_user_shard(text,text,text,text,text,text[],text,text,text[],integer,vector,text,text,text[])',
  );
}

function distributedByUser(pool: pg.Pool, signature: string): () => Promise<boolean> {
  return askedOnce(
    pool,
    `SELECT EXISTS (SELECT 1 FROM pg_dist_object o
       WHERE o.classid = 'pg_proc'::regclass AND o.distribution_argument_index IS NOT NULL
         AND o.objid = to_regprocedure('${signature}')) AS yes`,
  );
}
