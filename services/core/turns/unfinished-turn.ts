import type { TurnStatus } from '../../model/turns.js';
import type { StoredTurnText } from '../privacy/mask-turn.js';
import { storeTurn, type TurnWriterDeps } from './store-turn.js';
import type { TurnTarget } from './turn-scope.js';

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
