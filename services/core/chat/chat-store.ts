import { ClaimTakenOverError, completeIdempotencyKey } from '../../db/repositories/idempotency.js';
import type { AppendedTurn } from '../../db/repositories/turn-append.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryScope, SessionRow } from '../../model/sessions.js';
import type { MemoryDeps } from '../deps.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';
import type { StoredTurnText } from '../privacy/mask-turn.js';
import { newSessionName } from '../sessions/session-name.js';
import { sessionView } from '../sessions/session-view.js';
import { storeTurn, type TurnTarget, type TurnWriterDeps } from '../turns/store-turn.js';

/**
 * The reply to a request whose turn is not stored (outside the rollout, MEMORY_STORE_OUTSIDE_ROLLOUT=false).
 * With no turn's transaction to carry it, an Idempotency-Key is completed with the reply on its own.
 */
export async function respondWithoutStoring<R>(deps: Pick<MemoryDeps, 'db'>, claim: IdempotencyClaim | undefined, response: R): Promise<R> {
  if (!claim) return response;
  const completed = await completeIdempotencyKey(deps.db.asUser(claim.ref), {
    ...claim.ref,
    claimId: claim.claimId,
    responseStatus: claim.status,
    responseBody: response,
  }).catch((err: unknown) => {
    throw new AppError('memory-store-unavailable', 'the reply could not be recorded under its Idempotency-Key; please retry', {
      cause: err,
    });
  });
  if (!completed) throw new ClaimTakenOverError(claim.ref.key);
  claim.completed = true;
  return response;
}

/**
 * Upstream failures and streams whose client went away are kept, flagged, so the conversation's
 * record is complete; they never steer SQL. Failing to keep one is only logged: the request already fails.
 */
export async function storeUnfinishedTurn(
  deps: TurnWriterDeps,
  target: TurnTarget,
  turn: Pick<StoredTurnText, 'question' | 'augmentedQuestion' | 'vdpDatabaseNames' | 'vdpTagNames' | 'answerer' | 'status' | 'answer'>,
  metadata: Record<string, unknown>,
) {
  try {
    await storeTurn(deps, target, {
      turn: { ...turn, sqlQuery: null, queryExplanation: null, tablesUsed: [], executionResult: null, metadata },
      warnings: [],
      respond: () => undefined,
    });
  } catch (err) {
    deps.log.warn({ err }, 'recording the unfinished turn failed');
  }
}

/** The session as /memoryChat reports it (docs/design.md §4 names the id `conversation_id`). */
export function conversationMetadata(session: SessionRow) {
  const { session_id, slots: _slots, ...rest } = sessionView(session);
  return { conversation_id: session_id, ...rest };
}

/** Where a stored turn's result rows are downloaded as CSV; a turn without stored rows has none. */
export function csvUrl(stored: AppendedTurn, executionResult: unknown): { csv_url?: string } {
  if (!executionResult || (typeof executionResult === 'object' && Object.keys(executionResult).length === 0)) return {};
  return { csv_url: `/sessions/${stored.session.session_id}/turns/${stored.turnNumber}/result.csv` };
}

/** The request's session, or a new one named after `session_name` or the question. */
export function turnTarget(
  deps: Pick<MemoryDeps, 'pii'>,
  req: {
    identity: Identity;
    question: string;
    sessionId?: string;
    sessionName?: string;
    memoryScope?: MemoryScope;
    eraseEpoch: number;
    annIndexed?: boolean;
  },
  sessionId: string,
  now: Date,
): TurnTarget {
  return {
    identity: req.identity,
    eraseEpoch: req.eraseEpoch,
    ...(req.annIndexed ? { annIndexed: true } : {}),
    sessionId,
    createWithName: req.sessionId ? undefined : newSessionName(deps, req),
    ...(req.sessionId || !req.memoryScope ? {} : { createWithScope: req.memoryScope }),
    now,
  };
}

export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
