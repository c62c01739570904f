import type { Identity } from '../../model/identity.js';
import type { SessionRow } from '../../model/sessions.js';
import type { TurnStatus } from '../../model/turns.js';
import { type Param, param, type SqlFragment, sql, toQuery } from '../sql.js';
import { vectorParam } from '../vector-param.js';
import type { Queryable } from './queryable.js';
import { SESSION_COLUMNS, sessionFromJson } from './session-row.js';
import { expiresAfterWrite, type Retention, STORED_TURN_COLUMNS, type StoredTurn, storedTurnFromJson } from './sessions.js';

/** One stored turn of the caller's live session (every column but the vector), or undefined. */
export async function findStoredTurn(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  turnNumber: number,
  now: Date,
): Promise<{ session: boolean; turn?: StoredTurn }> {
  const tenant = param(identity.tenantId);
  const user = param(identity.userId);
  const session = param(sessionId);
  const { rows } = await db.query<{ turn: Record<string, unknown> | null }>(
    toQuery(sql`SELECT to_jsonb(x) AS turn FROM sessions s
     LEFT JOIN LATERAL (
       SELECT ${STORED_TURN_COLUMNS} FROM turns t
       WHERE t.tenant_id = ${tenant} AND t.user_id = ${user} AND t.session_id = ${session} AND t.turn_number = ${turnNumber}
     ) x ON TRUE
     WHERE s.tenant_id = ${tenant} AND s.user_id = ${user} AND s.session_id = ${session} AND s.expires_at > ${now}`),
  );
  const row = rows[0];
  if (!row) return { session: false };
  return { session: true, ...(row.turn ? { turn: storedTurnFromJson(row.turn) } : {}) };
}

export interface TurnCorrection {
  sqlQuery: string | null;
  answer: string;
  status: TurnStatus;
  embedding: number[] | null;
  embeddingModel: string;
  duplicateOf: number | null;
  /** The turn's lexical terms (services/core/search-terms/lexical-terms.ts), recomputed for its new SQL. */
  searchTerms: string;
}

/**
 * Replaces a turn's SQL, answer and status, with its new embedding and dedup mark, and clears its
 * rating: a corrected turn is judged afresh. Counts as a write of the session (sliding expiry). A
 * summary that covers the turn is dropped, since it may quote what was corrected; the session is
 * summarized again when next due.
 */
export async function correctTurn(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  turnNumber: number,
  retention: Retention,
  fix: TurnCorrection,
): Promise<{ session: SessionRow; turn: StoredTurn } | undefined> {
  const tenant = param(identity.tenantId);
  const user = param(identity.userId);
  const now = param(retention.now);
  const { rows } = await db.query<{ session: Record<string, unknown>; turn: Record<string, unknown> }>(
    toQuery(sql`WITH t AS (
       UPDATE turns SET sql_query = ${fix.sqlQuery}, answer = ${fix.answer}, status = ${fix.status},
              embedding = ${fix.embedding ? vectorParam(fix.embedding) : null}::vector, search_terms = ${fix.searchTerms}::tsvector,
              embedding_model = ${fix.embedding ? fix.embeddingModel : null}, duplicate_of = ${fix.duplicateOf}::integer,
              feedback_rating = NULL, feedback_comment = NULL, feedback_at = NULL
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${sessionId} AND turn_number = ${turnNumber}
         AND EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = ${tenant} AND x.user_id = ${user}
                     AND x.session_id = ${sessionId} AND x.expires_at > ${now})
       RETURNING ${STORED_TURN_COLUMNS}
     ), s AS (
       UPDATE sessions SET updated_at = ${now}, expires_at = ${expiresAfterWrite(retention, now)},
              ${forgetSummaryCovering(turnNumber)}
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${sessionId} AND EXISTS (SELECT 1 FROM t)
       RETURNING ${SESSION_COLUMNS}
     )
     SELECT to_jsonb(s) AS session, to_jsonb(t) AS turn FROM s, t`),
  );
  const row = rows[0];
  return row ? { session: sessionFromJson(row.session), turn: storedTurnFromJson(row.turn) } : undefined;
}

/**
 * Deletes one turn of a live session. The other turns keep their numbers (last_turn_number never
 * goes down); a turn marked as its duplicate then stands in for it in search. A summary that covers
 * the turn is dropped with it, so nothing of a deleted turn lives on in memory.
 */
export async function deleteTurn(db: Queryable, identity: Identity, sessionId: string, turnNumber: number, retention: Retention) {
  const tenant = param(identity.tenantId);
  const user = param(identity.userId);
  const now = param(retention.now);
  const { rows } = await db.query<{ session: Record<string, unknown> }>(
    toQuery(sql`WITH gone AS (
       DELETE FROM turns
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${sessionId} AND turn_number = ${turnNumber}
         AND EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = ${tenant} AND x.user_id = ${user}
                     AND x.session_id = ${sessionId} AND x.expires_at > ${now})
       RETURNING turn_number
     ), s AS (
       UPDATE sessions SET turn_count = turn_count - 1, updated_at = ${now}, expires_at = ${expiresAfterWrite(retention, now)},
              ${forgetSummaryCovering(turnNumber)}
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${sessionId} AND EXISTS (SELECT 1 FROM gone)
       RETURNING ${SESSION_COLUMNS}
     )
     SELECT to_jsonb(s) AS session FROM s`),
  );
  return rows[0] ? sessionFromJson(rows[0].session) : undefined;
}

/**
 * Records the caller's rating of a turn (the latest replaces an earlier one). Not a write of the
 * conversation. A down rating drops a summary that covers the turn: it may carry the turn's SQL,
 * which must steer nothing now.
 */
export async function rateTurn(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  turnNumber: number,
  now: Date,
  feedback: { rating: 'up' | 'down'; comment: string | null },
): Promise<StoredTurn | undefined> {
  const tenant = param(identity.tenantId);
  const user = param(identity.userId);
  const { rows } = await db.query<{ turn: Record<string, unknown> }>(
    toQuery(sql`WITH t AS (
       UPDATE turns SET feedback_rating = ${feedback.rating}, feedback_comment = ${feedback.comment}, feedback_at = ${now}
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${sessionId} AND turn_number = ${turnNumber}
         AND EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = ${tenant} AND x.user_id = ${user}
                     AND x.session_id = ${sessionId} AND x.expires_at > ${now})
       RETURNING ${STORED_TURN_COLUMNS}
     )${feedback.rating === 'down' ? forgetSummaryOf(tenant, user, sessionId, turnNumber) : sql``}
     SELECT to_jsonb(t) AS turn FROM t`),
  );
  return rows[0] ? storedTurnFromJson(rows[0].turn) : undefined;
}

/**
 * SET assignments that drop the session's summary when it covers `turnNumber`: it may quote the turn
 * as it was. The session is summarized again when next due.
 */
function forgetSummaryCovering(turnNumber: number): SqlFragment {
  return sql`summary_text = CASE WHEN summary_through_turn >= ${turnNumber} THEN NULL ELSE summary_text END,
    summary_through_turn = CASE WHEN summary_through_turn >= ${turnNumber} THEN NULL ELSE summary_through_turn END`;
}

/** For a down rating: the same, in a data-modifying CTE (it runs though nothing reads it), after the turn's update `t`. */
function forgetSummaryOf(tenant: Param, user: Param, sessionId: string, turnNumber: number): SqlFragment {
  return sql`, forgotten AS (
       UPDATE sessions SET ${forgetSummaryCovering(turnNumber)}
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${sessionId} AND EXISTS (SELECT 1 FROM t)
     )`;
}
