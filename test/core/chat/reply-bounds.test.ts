import { describe, expect, it } from 'vitest';
import { boundedReplyFields } from '../../../services/core/chat/reply-bounds.js';
import { cutText, storableJson } from '../../../services/core/stored-bounds.js';

const settings = { maxReplyBytes: 100_000, storedTextBytes: 2048, storedResult: { maxRows: 100, maxBytes: 4096 } };

describe('stored texts and replies bounded in bytes', () => {
  it('when a text is over the limit, then it is cut at a character boundary with a marker, the marker counted', () => {
    for (const text of ['a'.repeat(5000), 'é'.repeat(5000), '😀'.repeat(5000)]) {
      const cut = cutText(text, 2048)!;
      expect(Buffer.byteLength(cut.text)).toBeLessThanOrEqual(2048);
      expect(cut.text).not.toContain('\uFFFD');
      expect(cut.text).toMatch(new RegExp(`\\[cut by memorychat: the first \\d+ of ${Buffer.byteLength(text)} bytes are stored\\]$`));
      expect(text.startsWith(cut.text.slice(0, cut.text.lastIndexOf('\n')))).toBe(true);
    }
    expect(cutText('é'.repeat(1024), 2048)).toBeUndefined();
  });

  it('when a reply is within the bound, then it is sent as it came, NULs and lone surrogates replaced', () => {
    const fields = { answer: 'ok', tables_used: ['t'], extra: { 'k\u0000': ['v\ud800'] } };
    expect(boundedReplyFields(fields, settings, [])).toEqual({ answer: 'ok', tables_used: ['t'], extra: { 'k\uFFFD': ['v\uFFFD'] } });
    const clean = { answer: 'ok', tables_used: [] };
    expect(boundedReplyFields(clean, settings, [])).toBe(clean);
    expect(storableJson('a\udc00\ud83d\ude00')).toBe('a\uFFFD\ud83d\ude00');
  });

  it('when a reply is over the bound, then its answer, result and long fields are cut as stored, with a warning', () => {
    const warnings: string[] = [];
    const rows = Array.from({ length: 50 }, (_, i) => ({ i, text: 'r'.repeat(2000) }));
    const bounded = boundedReplyFields(
      {
        answer: 'a'.repeat(60_000),
        tables_used: ['t'],
        execution_result: rows,
        blob: { x: 'b'.repeat(50_000) },
        note: 'n'.repeat(9000),
        small: 1,
      },
      settings,
      warnings,
    );
    expect(Buffer.byteLength(JSON.stringify(bounded))).toBeLessThan(settings.maxReplyBytes);
    expect(bounded.answer).toMatch(/cut by memorychat/);
    expect((bounded.execution_result as unknown[]).length).toBe(2);
    expect(bounded.blob).toBeNull();
    expect(String(bounded.note)).toMatch(/cut by memorychat/);
    expect(bounded.small).toBe(1);
    expect(warnings).toEqual([expect.stringContaining('over 100000 bytes')]);
  });

  it('when a reply is still over the bound with its long fields cut, then it is refused as upstream-bad-response', () => {
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`f${i}`, 'x'.repeat(1000)]));
    expect(() => boundedReplyFields({ answer: 'a', tables_used: [], ...many }, settings, [])).toThrow(
      expect.objectContaining({ code: 'upstream-bad-response' }),
    );
  });
});
