import type { HistoryTurn } from '../../model/turns.js';
import type { Queryable } from './queryable.js';

export interface SessionKey {
  tenantId: string;
  userId: string;
  sessionId: string;
}

export interface SummaryState {
  summary_text: string | null;
  summary_through_turn: number | null;
  last_turn_number: number;
  turn_count: number;
}

export type TurnToSummarize = Omit<HistoryTurn, 'created_at' | 'messages'>;

/** The live session's summary bookkeeping, or undefined when it is gone or expired. */
export async function loadSummaryState(db: Queryable, key: SessionKey, now: Date): Promise<SummaryState | undefined> {
  const { rows } = await db.query<SummaryState>(
    `SELECT summary_text, summary_through_turn, last_turn_number, turn_count FROM sessions
     WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3 AND expires_at > $4`,
    [key.tenantId, key.userId, key.sessionId, now],
  );
  return rows[0];
}

/** Turns numbered in (afterTurn, throughTurn], oldest first, at most `limit`; a down-rated turn without its SQL, as in the window. */
export async function loadTurnsToSummarize(
  db: Queryable,
  key: SessionKey,
  afterTurn: number,
  throughTurn: number,
  limit: number,
): Promise<TurnToSummarize[]> {
  const { rows } = await db.query<TurnToSummarize>(
    `SELECT turn_number, status, question, answer, CASE WHEN feedback_rating = 'down' THEN NULL ELSE sql_query END AS sql_query,
            tables_used FROM turns
     WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3 AND turn_number > $4 AND turn_number <= $5
     ORDER BY turn_number LIMIT $6`,
    [key.tenantId, key.userId, key.sessionId, afterTurn, throughTurn, limit],
  );
  return rows;
}

/**
 * Saves a folded summary only if nobody moved the summary on since it was read (compare-and-set on
 * summary_through_turn), so two summarizers of one session can never overwrite each other; and only
 * if every turn it folded in is still stored (`foldedTurns`: how many of the session's turns in
 * (expectedThroughTurn, throughTurn] were read; numbers are never reused, so only a deletion lowers
 * the count). A conversation cleared or forgotten while its summary was being written resets
 * summary_through_turn to NULL, which a first summary also expects: the count keeps its turns out.
 */
export async function saveSummary(
  db: Queryable,
  key: SessionKey,
  summary: { text: string | null; throughTurn: number; expectedThroughTurn: number | null; foldedTurns: number },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE sessions SET summary_text = $4, summary_through_turn = $5
     WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3
       AND summary_through_turn IS NOT DISTINCT FROM $6::integer
       AND (SELECT count(*) FROM turns t WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.session_id = $3
              AND t.turn_number > COALESCE($6::integer, 0) AND t.turn_number <= $5) = $7`,
    [key.tenantId, key.userId, key.sessionId, summary.text, summary.throughTurn, summary.expectedThroughTurn, summary.foldedTurns],
  );
  return (rowCount ?? 0) > 0;
}
