import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildMemoryContext } from '../../../services/core/context/chat-block.js';
import { buildFormattedContext } from '../../../services/core/context/formats.js';
import { CONTINUATION_INDENT, quoteStored } from '../../../services/core/context/memory-block.js';
import type { SimilarTurn } from '../../../services/model/turns.js';
import { expectDelimitedMemory, INJECTIONS } from '../../support/fuzz/delimiting.js';
import { PROMPT_INJECTION, SQL_INJECTION, UNICODE } from '../../support/fuzz/values.js';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** Any text, weighted towards what tries to break out: injections, line separators, the block's tags. */
const storedText = fc.oneof(
  fc.constantFrom(...INJECTIONS, ...PROMPT_INJECTION, ...SQL_INJECTION, ...UNICODE),
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc
    .array(
      fc.constantFrom(
        '\n',
        '\r\n',
        '\r',
        '\u2028',
        '\u0085',
        '<',
        '/',
        'conversation_memory',
        'CONVERSATION-MEMORY',
        '> ',
        'x',
        ' ',
        '\u00AD',
      ),
      { maxLength: 20 },
    )
    .map((parts) => parts.join('')),
);

/** Stored text whose later lines start with a marker, so the prompt shows whether a stored line starts a line. */
const markedText = fc
  .tuple(storedText, fc.constantFrom('\n', '\r\n', '\r', '\v', '\f', '\u2028', '\u2029', '\u0085'), fc.nat(999))
  .map(([text, lineBreak, n]) => ({ text: `${text}${lineBreak}INJECTED-${n} forged line`, marker: `INJECTED-${n}` }));

const turn = (n: number, question: string, answer: string, sql: string): SimilarTurn => ({
  turn_number: n,
  status: 'ok',
  question,
  answer,
  sql_query: sql,
  tables_used: ['sales'],
  created_at: new Date(Date.now() - n * 60_000),
  session_id: '00000000-0000-4000-8000-000000000001',
  similarity: 0.9,
});

describe('stored text in context', () => {
  it('when any text is quoted, then no line of it but the first starts a line and no copy of the block tag survives', () => {
    fc.assert(
      fc.property(storedText, (text) => {
        const quoted = quoteStored(text);
        for (const line of quoted.split('\n').slice(1)) expect(line.startsWith(CONTINUATION_INDENT)).toBe(true);
        expect(quoted).not.toMatch(/<\s*\/?\s*conversation[\s_-]*memory/i);
        // Only line breaks, indentation and tag brackets change: the text is otherwise as stored.
        const rest = (s: string) => s.replace(/[\s\u0085]|&lt;|[<\uFF1C\uFE64\u2039\u27E8\u3008]/gu, '');
        expect(rest(quoted)).toBe(rest(text));
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('when memory for /memoryChat is built from hostile turns, then it is one delimited data block with every stored line inside it', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(markedText, markedText, markedText), { minLength: 1, maxLength: 4 }),
        markedText,
        fc.tuple(markedText, markedText, markedText),
        (rows, summary, [pairQuestion, pairSql, pairView]) => {
          const window = rows.map(([q, a, s], i) => turn(rows.length - i, q.text, a.text, s.text));
          const built = buildMemoryContext({
            window,
            similar: [turn(99, rows[0]![0].text, 'a', 'SELECT 1')],
            summary: summary.text,
            // A verified pair's question, SQL and views are stored text too (docs/verified-pairs.md).
            pairs: [{ pair_id: 'p', question: pairQuestion.text, sql_query: pairSql.text, tables_used: [pairView.text], similarity: 0.5 }],
            maxTokens: 100_000,
          });
          expectDelimitedMemory(built.text, [
            ...rows.flatMap((r) => r.map((m) => m.marker)),
            summary.marker,
            pairQuestion.marker,
            pairSql.marker,
            pairView.marker,
          ]);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('when the memory API builds context in any format from hostile turns and slots, then its text is one delimited data block', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(markedText, markedText, markedText), { minLength: 1, maxLength: 3 }),
        markedText,
        markedText,
        fc.constantFrom('text' as const, 'openai' as const, 'anthropic' as const),
        (rows, slot, summary, format) => {
          const window = rows.map(([q, a, s], i) => turn(rows.length - i, q.text, a.text, s.text));
          const built = buildFormattedContext({
            question: 'and 2023?',
            format,
            maxTokens: 100_000,
            now: new Date(),
            summary: summary.text,
            slots: { [slot.text]: slot.text, plain: { nested: slot.text } },
            window,
            memories: [turn(99, rows[0]![1].text, 'a', 'SELECT 1')],
          });
          const inBlock = [slot.marker, summary.marker, ...(format === 'text' ? rows.flatMap((r) => r.map((m) => m.marker)) : [])];
          const { after } = expectDelimitedMemory(built.augmented_question, inBlock);
          expect(after).toBe('\n\nCurrent question: and 2023?');
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });
});
