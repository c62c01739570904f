import { describe, expect, it } from 'vitest';
import { countRecurringTokens, countTokens } from '../../services/core/text.js';

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
});
