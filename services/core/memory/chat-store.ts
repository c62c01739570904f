import { ClaimTakenOverError, completeIdempotencyKey } from '../../../db/repositories/idempotency.js';
import { type AppendTurnRequest, appendTurn, type StoredTurn } from '../../../db/repositories/memory-store.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryScope, SessionRow } from '../../model/sessions.js';
import type { NewTurn } from '../../model/turns.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';
import { newSessionName } from '../sessions/session-name.js';
import { sessionView } from '../sessions/session-view.js';
import { storableTurn } from '../sessions/storable-turn.js';
import { storeTurn } from '../sessions/store-turn.js';
import type { MemoryDeps } from './deps.js';
import { turnSearchTerms } from './lexical-terms.js';

/** Where a turn goes: the caller's session, created with this name when it is new. */
export interface TurnTarget {
  identity: Identity;
  sessionId: string;
  createWithName?: string;
  /** The memory scope a new session keeps: the scope of the request that makes it. */
  createWithScope?: MemoryScope;
  now: Date;
  /** The user's erasure epoch when the request started: the turn is not stored if it moved since. */
  eraseEpoch: number;
}

function appendRequest(deps: MemoryDeps, target: TurnTarget, turn: NewTurn): AppendTurnRequest {
  return { ...target, ttlMs: deps.settings.ttlMs, ttlMode: deps.settings.ttlMode, turn };
}

export async function store<R>(
  deps: MemoryDeps,
  target: TurnTarget,
  turn: NewTurn,
  claim: IdempotencyClaim | undefined,
  respond: (stored: StoredTurn) => R,
): Promise<{ stored: StoredTurn; response: R }> {
  const result = await storeTurn(deps.db, appendRequest(deps, target, turn), claim, respond);
  if (!result) throw new AppError('session-not-found', `session ${target.sessionId} does not exist or has expired`);
  return result;
}

/**
 * The reply to a request whose turn is not stored (outside the rollout, MEMORY_STORE_OUTSIDE_ROLLOUT=false).
 * With no turn's transaction to carry it, an Idempotency-Key is completed with the reply on its own.
 */
export async function respondWithoutStoring<R>(deps: MemoryDeps, claim: IdempotencyClaim | undefined, response: R): Promise<R> {
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
 * record is complete; they never steer SQL.
 */
export async function storeUnfinishedTurn(
  deps: MemoryDeps,
  target: TurnTarget,
  turn: Pick<NewTurn, 'question' | 'augmentedQuestion' | 'vdpDatabaseNames' | 'vdpTagNames' | 'status' | 'answer'>,
  metadata: Record<string, unknown>,
) {
  try {
    const masked = storableTurn(
      deps,
      { ...turn, sqlQuery: null, queryExplanation: null, tablesUsed: [], executionResult: null, metadata },
      [],
    );
    await appendTurn(
      deps.db.asUser(target.identity),
      appendRequest(deps, target, {
        ...masked,
        searchTerms: turnSearchTerms(masked),
        embedding: null,
        embeddingModel: deps.embedder.modelId,
      }),
    );
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
export function csvUrl(stored: StoredTurn, executionResult: unknown): { csv_url?: string } {
  if (!executionResult || (typeof executionResult === 'object' && Object.keys(executionResult).length === 0)) return {};
  return { csv_url: `/sessions/${stored.session.session_id}/turns/${stored.turnNumber}/result.csv` };
}

/** The request's session, or a new one named after `session_name` or the question. */
export function turnTarget(
  deps: Pick<MemoryDeps, 'pii'>,
  req: { identity: Identity; question: string; sessionId?: string; sessionName?: string; memoryScope?: MemoryScope; eraseEpoch: number },
  sessionId: string,
  now: Date,
): TurnTarget {
  return {
    identity: req.identity,
    eraseEpoch: req.eraseEpoch,
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
