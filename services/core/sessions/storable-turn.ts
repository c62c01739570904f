import type { MemoryDeps } from '../memory/deps.js';
import { maskTurn, type StoredTurnText } from '../privacy/mask-turn.js';
import { limitStoredResult } from '../recall/result-limit.js';

/**
 * A turn as it may be stored and embedded: its result rows cut to MEMORY_STORE_RESULT_ROWS and
 * MEMORY_STORE_RESULT_BYTES (the cut recorded in `metadata.result_truncated`, and told in a warning),
 * then its personal data masked (MEMORY_PII). Both turn writers pass every turn through here.
 */
export function storableTurn<T extends StoredTurnText>(deps: Pick<MemoryDeps, 'pii' | 'settings'>, turn: T, warnings: string[]): T {
  const { result, truncated } = limitStoredResult(turn.executionResult, deps.settings.storedResult);
  if (!truncated) return maskTurn(deps.pii, turn);
  warnings.push(
    `only ${truncated.rows_stored} of ${truncated.rows_total ?? 'the'} result rows were stored; result.csv?fresh=true re-runs the SQL`,
  );
  return maskTurn(deps.pii, { ...turn, executionResult: result, metadata: { ...turn.metadata, result_truncated: truncated } });
}
