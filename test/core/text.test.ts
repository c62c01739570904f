import { describe, expect, it } from 'vitest';
import { countRecurringTokens, countTokens, countTokensByLine } from '../../services/core/text.js';

describe('token counts', () => {
  it('when a text recurs or is new, then the remembered count equals the counted one, beyond the bound too', () => {
    const texts = Array.from(
      { length: 5000 },
      (_, i) => `Question: how many singers are older than ${i}?\nSQL: SELECT count(*) FROM singer WHERE age > ${i}`,
    );
    for (const text of [...texts, ...texts.slice(0, 50), ...texts.slice(-50)]) expect(countRecurringTokens(text)).toBe(countTokens(text));
  });

  it('when stored text holds a special-token string, then it is counted as ordinary text', () => {
    expect(countRecurringTokens('say <|endoftext|> twice <|endoftext|>')).toBe(countTokens('say <|endoftext|> twice <|endoftext|>'));
    expect(countTokens('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('when a text is counted by its lines, then the sum equals the whole count, at every kind of line break', () => {
    // Pieces chosen to straddle a break: punctuation before it, "/" and white space after it, CRLF,
    // contractions, digits, combining marks, non-Latin letters and special-token strings.
    const pieces = [
      '\n',
      '\n\n',
      '\r\n',
      ' ',
      '    ',
      '/',
      '.',
      ':',
      ';',
      "'s",
      'SQL',
      'Question',
      'a',
      'É',
      'e\u0301',
      '12345',
      '日本',
      '👍',
      '<|endoftext|>',
      '\t',
      '-',
      '*/',
    ];
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    // One request's map of lines already counted, shared by every text as a context shares it.
    const seen = new Map<string, number>();
    for (let n = 0; n < 3000; n++) {
      const text = Array.from({ length: 1 + (next() % 40) }, () => pieces[next() % pieces.length]).join('');
      expect(countTokensByLine(text), JSON.stringify(text)).toBe(countTokens(text));
      expect(countTokensByLine(text, seen), JSON.stringify(text)).toBe(countTokens(text));
    }
    expect(seen.size).toBeGreaterThan(0);
  });
});
