import { describe, expect, it } from 'vitest';
import { buildMemoryContext } from '../../../services/core/context/chat-block.js';
import { countTokens } from '../../../services/core/text.js';
import type { HistoryTurn } from '../../../services/model/turns.js';

function turn(n: number, extra: Partial<HistoryTurn> = {}): HistoryTurn {
  return {
    turn_number: n,
    status: 'ok',
    question: `Question number ${n} about sales in region ${n}`,
    answer: `Answer ${n}`,
    sql_query: `SELECT SUM(amount) FROM sales WHERE region = ${n}`,
    tables_used: ['sales'],
    created_at: new Date(),
    ...extra,
  };
}

describe('buildMemoryContext', () => {
  const window = [5, 4, 3, 2, 1].map((n) => turn(n));

  it('when everything fits, then history is rendered oldest first and nothing is cut', () => {
    const built = buildMemoryContext({ window, similar: [], summary: null, maxTokens: 4000 });
    expect(built.truncated).toBe(false);
    expect(built.history.map((t) => t.turn_number)).toEqual([1, 2, 3, 4, 5]);
    expect(built.text.indexOf('number 1')).toBeLessThan(built.text.indexOf('number 5'));
    expect(built.tokens).toBe(countTokens(built.text));
  });

  it('when the budget is small, then the exact token count stays within it and the newest turns are kept', () => {
    for (const maxTokens of [60, 90, 120, 150]) {
      const built = buildMemoryContext({ window, similar: [], summary: null, maxTokens });
      expect(built.tokens).toBeLessThanOrEqual(maxTokens);
      expect(countTokens(built.text)).toBe(built.tokens);
      expect(built.truncated).toBe(true);
      if (built.history.length) expect(built.history.at(-1)!.turn_number).toBe(5);
    }
  });

  it('when the budget is zero, then there is no context and it says truncated', () => {
    const built = buildMemoryContext({ window, similar: [], summary: 'earlier', maxTokens: 0 });
    expect(built).toMatchObject({ text: '', tokens: 0, truncated: true });
  });

  it('when there is a summary, then it is kept right after the latest turn', () => {
    const built = buildMemoryContext({ window, similar: [], summary: 'The user explored sales by region.', maxTokens: 110 });
    expect(built.summaryUsed).toBe(true);
    expect(built.history.map((t) => t.turn_number)).toContain(5);
  });

  it('when a turn’s tables_used are every view its search considered, then its Tables line names those its SQL read', () => {
    const built = buildMemoryContext({
      window: [turn(1, { sql_query: 'SELECT * FROM "sales_db"."sales"', tables_used: ['hr_db.employees', 'sales_db.sales'] })],
      similar: [],
      summary: null,
      maxTokens: 4000,
    });
    expect(built.text).toContain('Tables: sales_db.sales\n');
    expect(built.text).not.toContain('employees');
  });

  it('when a turn is a clarification, then its answer is shown without SQL', () => {
    const built = buildMemoryContext({
      window: [turn(1, { status: 'clarification', sql_query: null, answer: 'Which year?' })],
      similar: [],
      summary: null,
      maxTokens: 4000,
    });
    expect(built.text).toContain('Which year?');
    expect(built.text).not.toContain('SQL:');
  });
});
