import type { StoredTurn } from '../../db/repositories/sessions.js';
import type { AppendedTurn } from '../../db/repositories/turn-append.js';
import type { ChainFormat } from './chains.js';

/** How a stored turn is shown by the memory API (session detail, turn corrections). */
export function storedTurnView(t: StoredTurn) {
  return {
    turn_number: t.turn_number,
    created_at: t.created_at.toISOString(),
    status: t.status,
    question: t.question,
    answer: t.answer,
    sql_query: t.sql_query,
    query_explanation: t.query_explanation,
    tables_used: t.tables_used,
    vdp_database_names: t.vdp_database_names,
    execution_result: t.execution_result ?? null,
    messages_format: (t.messages as { format?: ChainFormat } | null)?.format ?? null,
    messages: (t.messages as { messages?: unknown[] } | null)?.messages ?? null,
    context: t.context,
    metadata: t.metadata,
    duplicate_of: t.duplicate_of,
    vdp_tag_names: t.vdp_tag_names,
    feedback: t.feedback_rating
      ? { rating: t.feedback_rating, comment: t.feedback_comment, rated_at: new Date(t.feedback_at ?? 0).toISOString() }
      : null,
    accounting: {
      tokens: t.tokens ?? null,
      memory_retrieval_ms: t.memory_retrieval_ms,
      answerer_ms: t.answerer_ms,
      total_ms: t.total_ms,
    },
  };
}

/** Where a stored turn's result rows are downloaded as CSV; a turn without stored rows has none. */
export function csvUrl(stored: AppendedTurn, executionResult: unknown): { csv_url?: string } {
  if (!executionResult || (typeof executionResult === 'object' && Object.keys(executionResult).length === 0)) return {};
  return { csv_url: `/sessions/${stored.session.session_id}/turns/${stored.turnNumber}/result.csv` };
}
