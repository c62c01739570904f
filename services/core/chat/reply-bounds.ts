import { AppError } from '../../model/errors.js';
import type { Answer } from '../../providers/answerers/answerer.js';
import type { MemorySettings } from '../deps.js';
import { cutText, jsonBytesWithin, limitStoredResult, nestedDeeperThan, storableJson, tablesWithin } from '../stored-bounds.js';

/** As deep as a request body may nest (services/api/json-shape.ts). */
const MAX_DEPTH = 64;

/**
 * The answerer's reply fields as /memoryChat may send them back: as they came when the whole is within
 * ANSWER_MAX_REPLY_BYTES as JSON, otherwise with the answer and the result cut as they are stored
 * and any other field over MEMORY_STORE_TEXT_BYTES cut (a text) or left out (null), with a warning.
 * It runs before the turn is stored, so a turn is never committed whose reply cannot then be
 * serialised (a string past V8's longest, a jsonb value past Postgres's) and answers 500 after the
 * fact: a reply still over the bound is refused as 502 `upstream-bad-response`, and nothing is stored.
 * NULs and lone surrogates are replaced too (storableJson), since the reply is also stored, as jsonb,
 * under an Idempotency-Key; a reply nested deeper than a request may be is refused (502).
 */
export function boundedReplyFields(
  fields: Answer['fields'],
  settings: Pick<MemorySettings, 'maxReplyBytes' | 'storedTextBytes' | 'storedResult'>,
  warnings: string[],
): Answer['fields'] {
  const { maxReplyBytes, storedTextBytes } = settings;
  if (nestedDeeperThan(fields, MAX_DEPTH)) {
    throw new AppError('upstream-bad-response', `the answering backend's reply is nested deeper than ${MAX_DEPTH} levels`);
  }
  if (jsonBytesWithin(fields, maxReplyBytes) <= maxReplyBytes) return storableJson(fields);
  const bounded: Answer['fields'] = { ...fields, answer: cutText(fields.answer, storedTextBytes)?.text ?? fields.answer };
  bounded.tables_used = tablesWithin(fields.tables_used, storedTextBytes);
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'answer' || key === 'tables_used') continue;
    if (key === 'execution_result') bounded[key] = limitStoredResult(value, settings.storedResult).result;
    else if (jsonBytesWithin(value, storedTextBytes) > storedTextBytes) {
      bounded[key] = typeof value === 'string' ? (cutText(value, storedTextBytes)?.text ?? value) : null;
    }
  }
  if (jsonBytesWithin(bounded, maxReplyBytes) > maxReplyBytes) {
    throw new AppError(
      'upstream-bad-response',
      `the answering backend's reply is over ${maxReplyBytes} bytes, even with its long fields cut`,
    );
  }
  warnings.push(`the answering backend's reply was over ${maxReplyBytes} bytes: its long fields are sent cut, as they are stored`);
  return storableJson(bounded);
}
