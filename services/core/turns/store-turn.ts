import { isErasedDuringRequest, readEraseEpoch } from '../../db/repositories/erasures.js';
import { ClaimTakenOverError } from '../../db/repositories/idempotency.js';
import { type AppendTurnRequest, appendTurn, appendTurnCompletingKey, type StoredTurn } from '../../db/repositories/memory-store.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';

/**
 * Stores a turn and builds the request's response from it. For a request with an Idempotency-Key
 * the claim is completed with that response in the same transaction as the turn, so no crash can
 * leave a stored turn under a key that a retry would run again (docs/idempotency.md). Undefined when
 * the session is not the caller's live session. Nothing is stored, and the request gets
 * `erased-during-request`, when the user was erased since the request started (the barrier of
 * docs/design.md §7).
 */
export async function storeTurn<R>(
  db: ScopedDatabase,
  request: AppendTurnRequest,
  claim: IdempotencyClaim | undefined,
  respond: (stored: StoredTurn) => R,
): Promise<{ stored: StoredTurn; response: R } | undefined> {
  const scope = db.asUser(request.identity);
  try {
    if (!claim) {
      const stored = await appendTurn(scope, request);
      if (!stored) await assertNotErased(db, request);
      return stored && { stored, response: respond(stored) };
    }
    const completed = await appendTurnCompletingKey(scope, request, { ...claim.ref, claimId: claim.claimId }, (stored) => ({
      status: claim.status,
      body: respond(stored),
    }));
    if (!completed) {
      await assertNotErased(db, request);
      return undefined;
    }
    claim.completed = true;
    return { stored: completed.stored, response: completed.response.body };
  } catch (err) {
    if (err instanceof ClaimTakenOverError || err instanceof AppError) throw err;
    if (isErasedDuringRequest(err)) throw erasedDuringRequest(err);
    throw new AppError('memory-store-unavailable', 'the turn could not be stored; please retry', { cause: err });
  }
}

/**
 * The user's erasure epoch, read when a request that stores starts, before it writes anything (a
 * keyed session, the turn): an erasure that begins after this refuses the request's writes.
 */
export async function eraseEpochAtStart(db: ScopedDatabase, identity: Identity): Promise<number> {
  try {
    return await readEraseEpoch(db.asUser(identity), identity.tenantId, identity.userId);
  } catch (err) {
    throw new AppError('memory-store-unavailable', 'the memory store could not be read; please retry', { cause: err });
  }
}

export function erasedDuringRequest(cause?: unknown): AppError {
  return new AppError('erased-during-request', "the user's data was erased while this request ran; nothing of it was stored", {
    cause,
  });
}

/**
 * A session that was found when the request started is gone when the user was erased meanwhile:
 * that request gets the erasure's problem rather than a 404 for a session it did see.
 */
async function assertNotErased(db: ScopedDatabase, request: AppendTurnRequest): Promise<void> {
  const { tenantId, userId } = request.identity;
  if ((await readEraseEpoch(db.asUser(request.identity), tenantId, userId)) !== request.eraseEpoch) throw erasedDuringRequest();
}
