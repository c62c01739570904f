import type { NewTurn } from '../../model/turns.js';
import type { PiiMasker } from '../deps.js';

/** The text fields of a turn on its way to storage. */
export type StoredTurnText = Omit<NewTurn, 'embedding' | 'embeddingModel' | 'duplicateOf' | 'searchTerms' | 'accounting'>;

/**
 * A turn as it may be stored and embedded: every field a person wrote or an answerer returned,
 * masked (docs/privacy.md). Table and database names are identifiers, not personal data; SQL keeps
 * its structure and loses only the PII in its string literals.
 */
export function maskTurn<T extends StoredTurnText>(pii: PiiMasker, turn: T): T {
  if (pii.mode === 'off') return turn;
  return {
    ...turn,
    question: pii.text(turn.question),
    augmentedQuestion: pii.optionalText(turn.augmentedQuestion),
    answer: pii.text(turn.answer),
    sqlQuery: pii.sql(turn.sqlQuery),
    queryExplanation: pii.optionalText(turn.queryExplanation),
    executionResult: pii.json(turn.executionResult),
    metadata: pii.json(turn.metadata),
    ...(turn.messages === undefined ? {} : { messages: pii.json(turn.messages) }),
    ...(turn.context === undefined ? {} : { context: pii.json(turn.context) }),
  };
}
