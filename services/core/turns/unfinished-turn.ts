import type { StoredTurnText } from '../privacy/mask-turn.js';
import { storeTurn, type TurnWriterDeps } from './store-turn.js';
import type { TurnTarget } from './turn-scope.js';

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
