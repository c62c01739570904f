import { cutText } from '../text.js';

const ANSWER_CHARS_EMBEDDED = 200;

/** What a turn is found by (docs/design.md §8): question, SQL, tables and a short part of the answer. */
export function embeddedTurnText(turn: { question: string; sqlQuery: string | null; tablesUsed: string[]; answer: string }): string {
  return [turn.question, turn.sqlQuery ?? '', turn.tablesUsed.join(' '), cutText(turn.answer, ANSWER_CHARS_EMBEDDED)]
    .filter(Boolean)
    .join('\n');
}
