import { ClaimTakenOverError } from '../../../db/repositories/idempotency.js';
import { type AppendTurnRequest, appendTurn, appendTurnCompletingKey, type StoredTurn } from '../../../db/repositories/memory-store.js';
import type { ScopedDatabase } from '../../../db/row-security.js';
import { AppError } from '../../model/errors.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';

/**
 * Stores a turn and builds the request's response from it. For a request with an Idempotency-Key
 * the claim is completed with that response in the same transaction as the turn, so no crash can
 * leave a stored turn under a key that a retry would run again (docs/idempotency.md). Undefined when
 * the session is not the caller's live session.
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
      return stored && { stored, response: respond(stored) };
    }
    const completed = await appendTurnCompletingKey(scope, request, { ...claim.ref, claimId: claim.claimId }, (stored) => ({
      status: claim.status,
      body: respond(stored),
    }));
    if (!completed) return undefined;
    claim.completed = true;
    return { stored: completed.stored, response: completed.response.body };
  } catch (err) {
    if (err instanceof ClaimTakenOverError) throw err;
    throw new AppError('memory-store-unavailable', 'the turn could not be stored; please retry', { cause: err });
  }
}
