import { findSqlTurn, type SqlTurn, type SqlTurnLookup } from '../../db/repositories/turns.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryDeps } from '../deps.js';
import { notFound } from '../sessions/sessions.js';
import type { ResultTruncation } from '../stored-bounds.js';
import { executionResultToCsv } from './result-csv.js';
import { containsPattern, parseTurnRef, questionKeywords } from './turn-refs.js';

/** What SQL recall uses of the memory's collaborators. */
type RecallDeps = Pick<MemoryDeps, 'db' | 'clock' | 'pii'>;

/**
 * "Show SQL for the first question", "export that as csv": a session's SQL and results recalled
 * from memory, by turn reference or by keywords of the question.
 */
export async function recallSqlByRef(deps: RecallDeps, identity: Identity, sessionId: string, ref: string) {
  return sqlView(sessionId, await findTurn(deps, identity, sessionId, parseTurnRef(ref), `turn ${ref}`));
}

export async function recallSqlByKeywords(deps: RecallDeps, identity: Identity, sessionId: string, q: string) {
  const keywords = questionKeywords(q);
  if (!keywords.length)
    throw new AppError('validation-failed', 'q has no keywords to look for', {
      errors: [{ field: 'querystring.q', message: 'has no words' }],
    });
  const turn = await findTurn(
    deps,
    identity,
    sessionId,
    { keywords: keywords.map(containsPattern) },
    `a turn with SQL whose question mentions ${keywords.join(', ')}`,
  );
  return { ...sqlView(sessionId, turn), keywords };
}

/** The stored result of a turn as CSV, or a fresh one from `execute` (re-running the stored SQL). */
export async function recallResultCsv(
  deps: RecallDeps,
  identity: Identity,
  sessionId: string,
  ref: string,
  execute?: (sql: string) => Promise<unknown>,
): Promise<{ turnNumber: number; csv: string; truncated?: ResultTruncation }> {
  const turn = await findTurn(deps, identity, sessionId, parseTurnRef(ref), `turn ${ref}`);
  if (execute && deps.pii.hasMaskedLiteral(turn.sql_query)) {
    throw new AppError(
      'stored-sql-masked',
      `turn ${turn.turn_number}'s SQL was stored with personal data masked in its literals; ask the question again to re-run it`,
    );
  }
  const result = execute ? await execute(turn.sql_query) : turn.execution_result;
  const csv = executionResultToCsv(result);
  if (csv === undefined) {
    throw new AppError(
      'result-not-stored',
      `turn ${turn.turn_number} has no stored result rows to export${execute ? '' : '; try ?fresh=true'}`,
    );
  }
  // A fresh result is whole (up to the request's limit); a stored one may have been cut before storage.
  return { turnNumber: turn.turn_number, csv, ...(!execute && turn.result_truncated ? { truncated: turn.result_truncated } : {}) };
}

async function findTurn(deps: RecallDeps, identity: Identity, sessionId: string, lookup: SqlTurnLookup, what: string): Promise<SqlTurn> {
  const found = await findSqlTurn(deps.db.asUser(identity), identity, sessionId, deps.clock(), lookup);
  if (!found.session) throw notFound(sessionId);
  if (!found.turn) throw new AppError('turn-not-found', `session ${sessionId} has no ${what}`);
  if (!found.turn.has_sql) throw new AppError('turn-has-no-sql', `turn ${found.turn.turn_number} was answered without SQL`);
  return found.turn;
}

function sqlView(sessionId: string, turn: SqlTurn) {
  return {
    session_id: sessionId,
    turn_number: turn.turn_number,
    created_at: turn.created_at.toISOString(),
    status: turn.status,
    question: turn.question,
    sql_query: turn.sql_query,
    query_explanation: turn.query_explanation,
    tables_used: turn.tables_used,
    vdp_database_names: turn.vdp_database_names,
  };
}
