import type { TurnStatus } from '../../model/turns.js';
import type { Answer } from './answerer.js';

/**
 * Normalises an answerQuestion reply leniently: Denodo AI SDK versions differ (`tables_used` may be
 * '' or a comma list, `execution_result` the old `{"Row 1": …}` or the new `{full, llm, …}` form),
 * and the caller gets the fields back as the upstream sent them otherwise.
 */
export function normaliseUpstreamReply(body: Record<string, unknown>): Omit<Answer, 'latencyMs'> {
  const sqlQuery = typeof body.sql_query === 'string' && body.sql_query.trim() ? body.sql_query.trim() : null;
  const fields = {
    ...body,
    answer: textOf(body.answer),
    tables_used: tablesOf(body.tables_used),
  };
  const storedAnswer = withoutDisclaimer(fields.answer);
  return {
    fields,
    ...(storedAnswer === fields.answer ? {} : { storedAnswer }),
    status: statusOf(body, sqlQuery),
    sqlQuery,
    ...(!sqlQuery && SDK_AMBIGUITY.test(fields.answer) ? { asksClarification: true } : {}),
  };
}

/**
 * The first line of the SDK's answer to an ambiguous question (0.13 on: `build_ambiguity_message` in
 * api/utils/answer_question.py); its reply has no other mark of it.
 */
const SDK_AMBIGUITY = /^The LLM detected some ambiguity in your input\./;

/**
 * The SDK appends this paragraph to every answer unless the request says `disclaimer: false`
 * (answers, and a longer form for metadata answers). The caller sees it; memory keeps the answer
 * without it, or every later memory block would repeat it once per turn.
 */
const SDK_DISCLAIMER = /\s*DISCLAIMER: This response has been generated based on an LLM's interpretation of the data[\s\S]*$/;

function withoutDisclaimer(answer: string): string {
  return answer.replace(SDK_DISCLAIMER, '');
}

/** The reply to a 404 "no relevant views": an answer for the user, with no SQL. */
export function noRelevantViewsReply(message: string): Omit<Answer, 'latencyMs'> {
  return {
    fields: { answer: message, sql_query: '', tables_used: [] },
    status: 'clarification',
    sqlQuery: null,
  };
}

function statusOf(body: Record<string, unknown>, sqlQuery: string | null): TurnStatus {
  if (!sqlQuery) return 'clarification';
  const error = body.error ?? body.sql_error;
  if (typeof error === 'string' && error.trim()) return 'failed';
  const result = body.execution_result;
  if (typeof result === 'string' && /\b(error|exception|failed)\b/i.test(result)) return 'failed';
  return 'ok';
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  return JSON.stringify(value);
}

function tablesOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((t): t is string => typeof t === 'string' && t.trim() !== '');
  if (typeof value === 'string') {
    return value
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
  }
  return [];
}
