import { isErasedDuringRequest, readEraseEpoch } from '../../db/repositories/erasures.js';
import { ClaimTakenOverError } from '../../db/repositories/idempotency.js';
import { type AppendedTurn, type AppendTurnRequest, appendTurn, appendTurnCompletingKey } from '../../db/repositories/turn-append.js';
import { AppError } from '../../model/errors.js';
import type { NewTurn, RecentQuestion, TurnAccounting, TurnStatus } from '../../model/turns.js';
import type { MemoryDeps } from '../deps.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';
import { turnSearchTerms } from '../search-terms/lexical-terms.js';
import { traced } from '../tracing.js';
import { type StoredTurnText, storableTurn } from './storable-turn.js';
import { embeddedTurnText, embedWithDedup } from './turn-embedding.js';
import { erasedDuringRequest, type TurnTarget } from './turn-scope.js';

/** A turn as its writer has it, and what the writer wants done with it. */
export interface TurnWrite<R> {
  turn: StoredTurnText;
  /**
   * The session's recent questions: the turn is embedded and marked as the duplicate of the one it
   * nearly repeats. Left out, the turn is stored without a vector (memory commands, unfinished turns).
   */
  dedupAgainst?: RecentQuestion[];
  /** The question as asked and its embedding, made for the memory search: reused for dedup when the stored question is the same text. */
  asked?: { question: string; embedding: number[] };
  /** Taken just before the turn is written, so the total time counts the embedding. */
  accounting?: () => TurnAccounting;
  claim?: IdempotencyClaim;
  /** Every cut of the turn and a failed embedding is told here. */
  warnings: string[];
  /** The request's response from the stored turn (no I/O: with a claim it is stored in the turn's transaction). */
  respond: (stored: AppendedTurn, turn: NewTurn) => R;
}

/** What the turn writer uses of the memory's collaborators. */
export type TurnWriterDeps = Pick<MemoryDeps, 'db' | 'embedder' | 'settings' | 'pii' | 'log' | 'afterTurnStored' | 'turnWritten'>;

/** Turns that answer nothing (a memory command, a failed or abandoned answer) never make a summary due. */
const NOT_SUMMARIZED: ReadonlySet<TurnStatus> = new Set(['memory_command', 'incomplete', 'upstream_error']);

/**
 * The one writer of turns, for /memoryChat, memory commands and the memory API: the turn is cut to
 * the stored bounds and masked (storableTurn), embedded and checked against its session's recent
 * questions (embedWithDedup), given its search terms and accounting, and stored with its response;
 * then summarization is queued when the session is due (docs/design.md §7). Throws
 * `session-not-found` when the session is not the caller's live session, and `erased-during-request`,
 * storing nothing, when the user was erased since the target's epoch was read.
 */
export async function storeTurn<R>(
  deps: TurnWriterDeps,
  target: TurnTarget,
  write: TurnWrite<R>,
): Promise<{ stored: AppendedTurn; response: R }> {
  // Masked before embedding too: a vector must not carry what the stored text does not (docs/privacy.md).
  const text = storableTurn(deps, write.turn, write.warnings);
  const { embedding, duplicateOf } = write.dedupAgainst
    ? await embedWithDedup(
        deps,
        {
          text: embeddedTurnText(text),
          question: text.question,
          // Unless masking or a cut changed the question, it was embedded already, for the search.
          ...(write.asked?.question === text.question ? { questionEmbedding: write.asked.embedding } : {}),
        },
        write.dedupAgainst,
        { warnings: write.warnings, subject: 'this turn' },
      )
    : { embedding: null, duplicateOf: undefined };
  const turn: NewTurn = {
    ...text,
    // From the masked turn: no personal data reaches the lexical index either.
    searchTerms: turnSearchTerms(text),
    embedding,
    embeddingModel: deps.embedder.modelId,
    ...(duplicateOf !== undefined ? { duplicateOf } : {}),
    ...(write.accounting ? { accounting: write.accounting() } : {}),
  };
  const request: AppendTurnRequest = { ...target, ttlMs: deps.settings.ttlMs, ttlMode: deps.settings.ttlMode, turn };
  const { claim } = write;
  const db = deps.db.asUser(target.identity);
  const result = await traced('memory.store', {}, async () => {
    try {
      // With an Idempotency-Key the claim is completed with the response in the turn's transaction, so
      // no crash can leave a stored turn under a key that a retry would run again (docs/idempotency.md).
      const appended = claim
        ? await appendTurnCompletingKey(db, request, { ...claim.ref, claimId: claim.claimId }, (stored) => ({
            status: claim.status,
            body: write.respond(stored, turn),
          }))
        : await appendTurn(db, request).then((stored) => stored && { stored, response: { body: write.respond(stored, turn) } });
      // A session that was found when the request started is gone when the user was erased meanwhile:
      // that request gets the erasure's problem rather than a 404 for a session it did see.
      if (!appended && (await readEraseEpoch(db, target.identity.tenantId, target.identity.userId)) !== target.eraseEpoch) {
        throw erasedDuringRequest();
      }
      return appended && { stored: appended.stored, response: appended.response.body };
    } catch (err) {
      if (err instanceof ClaimTakenOverError || err instanceof AppError) throw err;
      // The barrier of docs/design.md §7: the user was erased since the request started; nothing is stored.
      if (isErasedDuringRequest(err)) throw erasedDuringRequest(err);
      throw new AppError('memory-store-unavailable', 'the turn could not be stored; please retry', { cause: err });
    }
  });
  if (!result) throw new AppError('session-not-found', `session ${target.sessionId} does not exist or has expired`);
  if (claim) claim.completed = true;
  deps.turnWritten?.({ status: turn.status, sessionTurns: result.stored.session.turn_count });
  if (NOT_SUMMARIZED.has(turn.status)) return result;
  try {
    await deps.afterTurnStored?.({
      identity: target.identity,
      sessionId: target.sessionId,
      turnCount: result.stored.session.turn_count,
      lastTurnNumber: result.stored.turnNumber,
      summaryThroughTurn: result.stored.session.summary_through_turn,
    });
  } catch (err) {
    // The turn is stored and its reply made: nothing after that may turn it into a 5xx (a retry would
    // store it again); a summary that is not queued now is queued by the next turn.
    deps.log.warn({ err }, 'queueing summarization failed');
  }
  return result;
}

/** What every turn of a /memoryChat question stores, whatever the answerer did. */
export type QuestionTurnBase = Pick<StoredTurnText, 'question' | 'augmentedQuestion' | 'vdpDatabaseNames' | 'vdpTagNames' | 'answerer'>;

/**
 * Upstream failures and streams whose client went away are kept, flagged, so the conversation's
 * record is complete; they never steer SQL. Failing to keep one is only logged: the request already fails.
 */
export async function storeUnfinishedTurn(
  deps: TurnWriterDeps,
  target: TurnTarget,
  base: QuestionTurnBase,
  outcome: { status: TurnStatus; answer: string; metadata: Record<string, unknown> },
) {
  try {
    await storeTurn(deps, target, {
      turn: { ...base, ...outcome, sqlQuery: null, queryExplanation: null, tablesUsed: [], executionResult: null },
      warnings: [],
      respond: () => undefined,
    });
  } catch (err) {
    deps.log.warn({ err }, 'recording the unfinished turn failed');
  }
}
