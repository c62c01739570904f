import { correctTurn, deleteTurn, findStoredTurn, rateTurn } from '../../db/repositories/turn-control.js';
import { recentQuestions } from '../../db/repositories/turns.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { ClientTurnStatus } from '../../model/turns.js';
import type { MemoryDeps } from '../deps.js';
import { pairsAfterRating } from '../pairs/pair-feedback.js';
import { turnSearchTerms } from '../search-terms/lexical-terms.js';
import { embeddedTurnText, embedWithDedup } from '../turns/turn-embedding.js';
import { sessionView } from './session-view.js';
import { notFound } from './sessions.js';
import { storedTurnView } from './turn-view.js';

export interface TurnPatch {
  sql_query?: string | null;
  answer?: string;
  status?: ClientTurnStatus;
}

/**
 * `PATCH /sessions/{id}/turns/{n}`: corrects a turn's SQL, answer or status (docs/chat-native.md). The
 * turn is embedded again from its corrected text and checked again against the earlier questions of
 * its session for dedup; its rating is cleared, so a down-rated turn steers SQL again once corrected.
 * Without a `status`, new SQL makes the turn `ok` and removed SQL a `clarification`.
 */
export async function correctUserTurn(deps: MemoryDeps, identity: Identity, sessionId: string, turnNumber: number, patch: TurnPatch) {
  const db = deps.db.asUser(identity);
  const now = deps.clock();
  const found = await findStoredTurn(db, identity, sessionId, turnNumber, now);
  if (!found.session) throw notFound(sessionId);
  const turn = found.turn;
  if (!turn) throw new AppError('turn-not-found', `session ${sessionId} has no turn ${turnNumber}`);
  const sqlQuery = patch.sql_query === undefined ? turn.sql_query : patch.sql_query?.trim() || null;
  const answer = patch.answer ?? turn.answer;
  const status = patch.status ?? (patch.sql_query === undefined ? turn.status : sqlQuery ? 'ok' : 'clarification');

  const warnings: string[] = [];
  // Only earlier turns can be the original of a duplicate.
  const earlier = (await recentQuestions(db, identity, sessionId, now, deps.settings.maxTurnsPerSession + 1)).filter(
    (r) => r.turn_number < turnNumber,
  );
  const { embedding, duplicateOf } = await embedWithDedup(
    deps,
    { text: embeddedTurnText({ question: turn.question, sqlQuery, tablesUsed: turn.tables_used, answer }), question: turn.question },
    earlier,
    { warnings, subject: 'the corrected turn' },
  );
  const corrected = await correctTurn(db, identity, sessionId, turnNumber, retention(deps, now), {
    sqlQuery,
    answer,
    status,
    embedding,
    embeddingModel: deps.embedder.modelId,
    duplicateOf,
    searchTerms: turnSearchTerms({ question: turn.question, sqlQuery, tablesUsed: turn.tables_used }),
  });
  if (!corrected) throw notFound(sessionId);
  return { session: sessionView(corrected.session), turn: storedTurnView(corrected.turn), warnings };
}

/** `DELETE /sessions/{id}/turns/{n}`: one turn gone, the others' numbers unchanged. */
export async function deleteUserTurn(deps: MemoryDeps, identity: Identity, sessionId: string, turnNumber: number) {
  const now = deps.clock();
  const session = await deleteTurn(deps.db.asUser(identity), identity, sessionId, turnNumber, retention(deps, now));
  if (!session) await missing(deps, identity, sessionId, turnNumber);
}

/**
 * `POST /sessions/{id}/turns/{n}/feedback`: a down-rated turn's SQL steers nothing until the turn is
 * corrected, and counts against the verified pairs its memory held; an up-rated one may become a pair.
 */
export async function rateUserTurn(
  deps: MemoryDeps,
  identity: Identity,
  sessionId: string,
  turnNumber: number,
  feedback: { rating: 'up' | 'down'; comment?: string },
) {
  const rated = await rateTurn(deps.db.asUser(identity), identity, sessionId, turnNumber, deps.clock(), {
    rating: feedback.rating,
    comment: feedback.comment?.trim() || null,
  });
  if (!rated) return missing(deps, identity, sessionId, turnNumber);
  await pairsAfterRating(deps, identity, { sessionId, turnNumber, metadata: rated.metadata }, feedback.rating);
  return { session_id: sessionId, turn: storedTurnView(rated) };
}

/** Which 404 a missing turn is: no such session, or no such turn in it. */
async function missing(deps: MemoryDeps, identity: Identity, sessionId: string, turnNumber: number): Promise<never> {
  const found = await findStoredTurn(deps.db.asUser(identity), identity, sessionId, turnNumber, deps.clock());
  if (!found.session) throw notFound(sessionId);
  throw new AppError('turn-not-found', `session ${sessionId} has no turn ${turnNumber}`);
}

function retention(deps: MemoryDeps, now: Date) {
  return { now, ttlMs: deps.settings.ttlMs, ttlMode: deps.settings.ttlMode };
}
