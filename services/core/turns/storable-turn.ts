import type { NewTurn } from '../../model/turns.js';
import type { MemoryDeps, PiiMasker } from '../deps.js';
import { cutText, limitStoredResult, storableJson, tablesWithin } from '../stored-bounds.js';

/** The text fields of a turn on its way to storage. */
export type StoredTurnText = Omit<NewTurn, 'embedding' | 'embeddingModel' | 'duplicateOf' | 'searchTerms' | 'accounting'>;

/** The texts of a turn bounded by MEMORY_STORE_TEXT_BYTES, by the name a warning gives them. */
const BOUNDED_TEXTS = {
  question: 'question',
  augmentedQuestion: 'augmented question',
  answer: 'answer',
  sqlQuery: 'SQL',
  queryExplanation: 'query explanation',
} as const satisfies Partial<Record<keyof StoredTurnText, string>>;

/**
 * A turn as it may be stored and embedded: its result rows cut to MEMORY_STORE_RESULT_ROWS and
 * MEMORY_STORE_RESULT_BYTES (the cut recorded in `metadata.result_truncated`), each text cut to
 * MEMORY_STORE_TEXT_BYTES with a marker (the original sizes in `metadata.texts_cut`), and its table
 * names to the same bytes in all, each cut told in a warning; NULs and lone surrogates replaced by
 * U+FFFD; then its personal data masked
 * (MEMORY_PII). Every writer of turns passes them through here, so no answer, however large, makes a
 * turn that the database, the reply or a GDPR export of it cannot hold.
 */
export function storableTurn<T extends StoredTurnText>(deps: Pick<MemoryDeps, 'pii' | 'settings'>, turn: T, warnings: string[]): T {
  const { storedResult, storedTextBytes } = deps.settings;
  const bounded: T = { ...turn };
  const metadata: Record<string, unknown> = { ...turn.metadata };
  const { result, truncated } = limitStoredResult(turn.executionResult, storedResult);
  if (truncated) {
    bounded.executionResult = result;
    metadata.result_truncated = truncated;
    warnings.push(
      `only ${truncated.rows_stored} of ${truncated.rows_total ?? 'the'} result rows were stored; result.csv?fresh=true re-runs the SQL`,
    );
  }
  const textsCut: Record<string, number> = {};
  for (const [field, name] of Object.entries(BOUNDED_TEXTS) as [keyof typeof BOUNDED_TEXTS, string][]) {
    const text = turn[field];
    const cut = typeof text === 'string' ? cutText(text, storedTextBytes) : undefined;
    if (!cut) continue;
    bounded[field] = cut.text;
    textsCut[field] = cut.totalBytes;
    warnings.push(`the ${name} was ${cut.totalBytes} bytes; only its first ${storedTextBytes} bytes were stored, marked as cut`);
  }
  if (Object.keys(textsCut).length) metadata.texts_cut = textsCut;
  const tables = tablesWithin(turn.tablesUsed, storedTextBytes);
  if (tables.length < turn.tablesUsed.length) {
    bounded.tablesUsed = tables;
    warnings.push(`only ${tables.length} of the ${turn.tablesUsed.length} table names were stored`);
  }
  if (truncated || Object.keys(textsCut).length) bounded.metadata = metadata;
  // An answerer's text may hold NULs or lone surrogates, which Postgres refuses (stored-bounds.ts).
  return maskTurn(deps.pii, storableJson(bounded));
}

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
