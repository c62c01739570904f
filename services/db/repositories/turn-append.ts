import type { Identity } from '../../model/identity.js';
import type { MemoryScope, SessionRow } from '../../model/sessions.js';
import type { NewTurn } from '../../model/turns.js';
import { param, type SqlFragment, sql } from '../sql.js';
import { isNotOnUserShard, type UserShardAppend } from '../user-shard-call.js';
import { vectorParam } from '../vector-param.js';
import { withEraseBarrier } from './erase-barrier.js';
import { ClaimTakenOverError, completeIdempotencyKey, type IdempotencyKeyRef } from './idempotency.js';
import { prepared, type Queryable, type TransactionalQueryable } from './queryable.js';
import { SESSION_COLUMNS, sessionFromJson } from './session-row.js';

export interface AppendTurnRequest {
  identity: Identity;
  sessionId: string;
  /** Create the session with this name; otherwise the session must exist and be live. */
  createWithName?: string;
  /** The memory scope the created session keeps; none: the default. */
  createWithScope?: MemoryScope;
  now: Date;
  ttlMs: number;
  ttlMode: 'sliding' | 'absolute';
  turn: NewTurn;
  /** The user's erasure epoch when the request started (readEraseEpoch): nothing is stored if it moved since. */
  eraseEpoch: number;
  /**
   * The request's retrieval found the user past the threshold (Retrieved.annIndexed): the turn goes
   * into its model's approximate index (migration 017), and so does a batch of the user's turns not yet in it.
   */
  annIndexed?: boolean;
}

/**
 * How many of a user's turns not yet in the approximate index one append of theirs puts there: a user
 * who crosses MEMORY_EXACT_SEARCH_MAX_TURNS (2,000 by default) is indexed over their next ten turns,
 * each paying a bounded share of the index inserts.
 */
const ANN_MARK_BATCH = 200;

/**
 * Stores a turn and its embedding, numbering it and touching its session, in ONE statement (so
 * atomically, and with one round trip). The session row's lock orders concurrent turns. On Citus it
 * is one call delegated to the user's worker, behind the erasure barrier in the same round trip
 * (appendedOnUserShard), or in a transaction two statements behind the barrier's own (appendOnCitus).
 * Returns undefined when the session to append to is not the caller's live session.
 */
export async function appendTurn(db: Queryable, req: AppendTurnRequest): Promise<{ session: SessionRow; turnNumber: number } | undefined> {
  // Declared first, so it is the first parameter of the statement it is in (db/sql.ts): on a Citus
  // worker the delegated append fills it with the turn number its session statement returned.
  const turnNumber = param(TURN_NUMBER_FROM_SESSION);
  const t = req.turn;
  const tenant = param(req.identity.tenantId);
  const user = param(req.identity.userId);
  const session = param(req.sessionId);
  const now = param(req.now);
  const slots = param(t.context ? JSON.stringify(t.context) : null);
  const ttlFromNow = sql`${now}::timestamptz + ${param(req.ttlMs)}::float8 * interval '1 millisecond'`;
  // Absolute mode keeps the expiry set at creation; LEAST only matters if MEMORY_TTL was shortened since.
  const expiry = req.ttlMode === 'sliding' ? ttlFromNow : sql`LEAST(expires_at, ${ttlFromNow})`;
  // Raises SQLSTATE ME001, rolling the whole statement back, when the user was erased since the
  // request started (migration 011); the turn is written only after the session row, so this guards both.
  const notErased = sql`memorychat_erase_barrier(${tenant}, ${user}, ${param(req.eraseEpoch)}::bigint)`;
  const turnColumns = sql`tenant_id, user_id, session_id, turn_number, created_at, status, question,
    augmented_question, answer, sql_query, query_explanation, tables_used,
    vdp_database_names, execution_result, metadata, embedding, embedding_model,
    messages, context, duplicate_of, search_terms, tokens, memory_retrieval_ms, answerer_ms, total_ms,
    vdp_tag_names, answerer, ann_indexed`;
  const turnValues = (turnNumber: SqlFragment) => sql`${tenant}, ${user}, ${session}, ${turnNumber}, ${now}, ${t.status}, ${t.question},
    ${t.augmentedQuestion}, ${t.answer}, ${t.sqlQuery}, ${t.queryExplanation}, ${t.tablesUsed},
    ${t.vdpDatabaseNames}, ${t.executionResult === undefined ? null : JSON.stringify(t.executionResult)}::jsonb,
    ${JSON.stringify(t.metadata)}::jsonb, ${t.embedding ? vectorParam(t.embedding) : null}::vector,
    ${t.embedding ? t.embeddingModel : null},
    ${t.messages === undefined || t.messages === null ? null : JSON.stringify(t.messages)}::jsonb,
    ${slots}::jsonb, ${t.duplicateOf ?? null}::integer, ${t.searchTerms}::tsvector,
    ${t.accounting?.tokens === undefined || t.accounting.tokens === null ? null : JSON.stringify(t.accounting.tokens)}::jsonb,
    ${t.accounting?.memoryRetrievalMs ?? null}::float8, ${t.accounting?.answererMs ?? null}::float8,
    ${t.accounting?.totalMs ?? null}::float8, ${t.vdpTagNames ?? []}::text[], ${t.answerer ?? null}::text,
    ${req.annIndexed === true}::boolean`;
  // By primary key (not ctid), so that on Citus too the statement is routed to the user's shard.
  const markForAnn = sql`UPDATE turns SET ann_indexed = true
    WHERE tenant_id = ${tenant} AND user_id = ${user} AND NOT ann_indexed
      AND (session_id, turn_number) IN (SELECT u.session_id, u.turn_number FROM turns u
        WHERE u.tenant_id = ${tenant} AND u.user_id = ${user} AND NOT u.ann_indexed LIMIT ${ANN_MARK_BATCH})`;
  const newSession = sql`${tenant}, ${user}, ${session}, ${req.createWithName}, ${now}, ${now}, ${ttlFromNow}, 1, 1,
                  jsonb_strip_nulls(COALESCE(${slots}::jsonb, '{}'::jsonb)), ${req.createWithScope ?? null}::text`;
  // On Citus a new session is inserted with VALUES: the barrier runs before it (withEraseBarrier), and
  // Citus plans an INSERT ... SELECT through the coordinator.
  const touchSessionWhere = (distributed: boolean, condition: SqlFragment) =>
    req.createWithName !== undefined
      ? sql`INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at,
                               turn_count, last_turn_number, slots, memory_scope)
         ${distributed ? sql`VALUES (${newSession})` : sql`SELECT ${newSession} WHERE ${condition}`}`
      : sql`UPDATE sessions SET turn_count = turn_count + 1, last_turn_number = last_turn_number + 1, updated_at = ${now},
           slots = CASE WHEN ${slots}::jsonb IS NULL THEN slots ELSE jsonb_strip_nulls(slots || ${slots}::jsonb) END,
           expires_at = ${expiry}
         WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${session} AND expires_at > ${now} AND ${condition}`;

  const onUserShard = await appendedOnUserShard(db, () => ({
    session: prepared(sql`${touchSessionWhere(true, sql`TRUE`)} RETURNING ${SESSION_COLUMNS}, last_turn_number`),
    turn: prepared(sql`INSERT INTO turns (${turnColumns}) VALUES (${turnValues(sql`${turnNumber}::integer`)}) RETURNING turn_number`),
    ...(req.annIndexed ? { mark: prepared(markForAnn) } : {}),
    barrier: { ...ERASE_BARRIER, values: [req.identity.tenantId, req.identity.userId, String(req.eraseEpoch)] },
  }));
  if (onUserShard !== NOT_TAKEN) return onUserShard;

  return withEraseBarrier(db, notErased, async (tx, condition) => {
    const distributed = (await tx.isDistributed?.()) ?? false;
    const touchSession = touchSessionWhere(distributed, condition);
    if (distributed) {
      const appended = await appendOnCitus(tx, touchSession, turnColumns, turnValues);
      if (appended && req.annIndexed) await tx.query(prepared(markForAnn));
      return appended;
    }

    const { rows } = await tx.query<{ session: Record<string, unknown>; turn_number: number }>(
      prepared(
        sql`WITH s AS (
         ${touchSession}
         RETURNING ${SESSION_COLUMNS}, last_turn_number
       ), t AS (
         INSERT INTO turns (${turnColumns})
         SELECT ${turnValues(sql`s.last_turn_number`)}
         FROM s
         RETURNING turn_number
       )${req.annIndexed ? sql`, marked AS (${markForAnn})` : sql``}
       SELECT to_jsonb(s) AS session, t.turn_number FROM s, t`,
      ),
    );
    const row = rows[0];
    if (!row) return undefined;
    return { session: sessionFromJson(row.session), turnNumber: row.turn_number };
  });
}

/** The placeholder of the turn number in the delegated append's turn statement: the worker puts the real one in its place. */
const TURN_NUMBER_FROM_SESSION = 0;

/** The erasure barrier as the delegated append runs it on the coordinator (migration 011): tenant, user, epoch. */
const ERASE_BARRIER = { name: 'mc_erase_barrier', text: 'SELECT memorychat_erase_barrier($1, $2, $3::bigint)' };

const NOT_TAKEN = Symbol('not appended on the user shard');

/**
 * The append as one call delegated to the worker holding the user's shards (db/user-shard-call.ts),
 * where `db` offers it: on a Citus coordinator, outside a transaction. NOT_TAKEN where it does not, and
 * when the worker found the user's shards moved away (a shard move's switch-over since the call was
 * routed): it stored nothing, and the caller appends through the coordinator, which routes to where they are now.
 */
async function appendedOnUserShard(
  db: Queryable,
  append: () => UserShardAppend,
): Promise<{ session: SessionRow; turnNumber: number } | undefined | typeof NOT_TAKEN> {
  if (!db.appendOnUserShard) return NOT_TAKEN;
  const built = () => {
    const statements = append();
    if (statements.turn.values?.[0] !== TURN_NUMBER_FROM_SESSION)
      throw new Error('the turn number must be the turn statement’s first parameter');
    return statements;
  };
  try {
    const appended = await db.appendOnUserShard(built);
    if (appended === undefined) return NOT_TAKEN;
    return appended ? { session: sessionFromJson(appended.session), turnNumber: appended.turn_number } : undefined;
  } catch (err) {
    if (isNotOnUserShard(err)) return NOT_TAKEN;
    throw err;
  }
}

/**
 * The append on Citus in a transaction: the session row, then the turn, two statements in the caller's
 * transaction. Citus plans a write in a CTE that another write reads (the turn's INSERT ... SELECT FROM
 * s) as subplans through the coordinator; each of these two is routed whole to the user's shard.
 */
async function appendOnCitus(
  tx: Queryable,
  touchSession: SqlFragment,
  turnColumns: SqlFragment,
  turnValues: (turnNumber: SqlFragment) => SqlFragment,
): Promise<{ session: SessionRow; turnNumber: number } | undefined> {
  const touched = await tx.query<Record<string, unknown> & { last_turn_number: number }>(
    prepared(sql`${touchSession} RETURNING ${SESSION_COLUMNS}, last_turn_number`),
  );
  const session = touched.rows[0];
  if (!session) return undefined;
  const { rows } = await tx.query<{ turn_number: number }>(
    prepared(
      sql`INSERT INTO turns (${turnColumns}) VALUES (${turnValues(sql`${param(session.last_turn_number)}::integer`)}) RETURNING turn_number`,
    ),
  );
  return { session: sessionFromJson(session), turnNumber: rows[0]!.turn_number };
}

/** A turn just appended: the session after it and the turn's number. */
export type AppendedTurn = NonNullable<Awaited<ReturnType<typeof appendTurn>>>;

/**
 * Stores a turn and completes the Idempotency-Key claim of the request that wrote it in ONE
 * transaction, so that no crash can leave a stored turn under a key that a retry would run again.
 * `respond` builds the response to store with the key from the stored turn (no I/O: the transaction
 * is open). Throws ClaimTakenOverError, and stores nothing, when a retry has taken the claim over.
 */
export async function appendTurnCompletingKey<B>(
  db: TransactionalQueryable,
  req: AppendTurnRequest,
  claim: IdempotencyKeyRef & { claimId: string },
  respond: (stored: AppendedTurn) => { status: number; body: B },
): Promise<{ stored: AppendedTurn; response: { status: number; body: B } } | undefined> {
  return db.transaction(async (tx) => {
    const stored = await appendTurn(tx, req);
    if (!stored) return undefined;
    const response = respond(stored);
    const completed = await completeIdempotencyKey(tx, { ...claim, responseStatus: response.status, responseBody: response.body });
    if (!completed) throw new ClaimTakenOverError(claim.key);
    return { stored, response };
  });
}
