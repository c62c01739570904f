import { describe, expect, it } from 'vitest';
import { type RerankCandidate, rerankFeatures, rerankSimilar, TODAY } from '../../scripts/eval/rerank/similar-rerank.js';

const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 0, minutes));
const candidate = (sql: string, tables: string, score: number, minutes = 0): RerankCandidate => ({
  question: 'earlier',
  sql_query: sql,
  tables_used: [],
  created_at: at(minutes),
  score,
  tables,
});

describe("the rerank experiment: linking a question to candidates' tables", () => {
  it('when one candidate reads the table the question names and another a neighbouring one, then only the first reads it', () => {
    const [airports, airlines] = rerankFeatures('What are all the airports?', [
      candidate('SELECT * FROM airports', 'airports', 2 / 61, 10),
      candidate('SELECT * FROM airlines', 'airlines', 1 / 61, 0),
    ]);
    expect(airports).toMatchObject({ namedRead: 1, unnamedRead: 0, fused: 1, recency: 1 });
    expect(airlines).toMatchObject({ namedRead: 0, unnamedRead: 1, fused: 0.5, recency: 0 });
  });

  it('when a question asks how many, then a counting statement agrees with it on that shape and a listing one does not', () => {
    const [count, list] = rerankFeatures('How many singers are there?', [
      candidate('SELECT count(*) FROM singer', 'singer', 0.03),
      candidate('SELECT name FROM singer', 'singer', 0.03),
    ]);
    expect(count!.shapeAgreement).toBe(1);
    expect(list!.shapeAgreement).toBe(5 / 6);
  });

  it('when the same question was asked before, then its turn stays first whatever the weights', () => {
    const turns = [candidate('SELECT * FROM airlines', 'airlines', 2 / 61), candidate('SELECT * FROM airports', 'airports', 1 + 1 / 61)];
    const weights = { ...TODAY, namedRead: 0.5 };
    expect(rerankSimilar('What are all the airlines?', turns, 1, weights)[0]!.tables).toBe('airports');
  });

  it('when k is below the candidates, then the best turn of each set of tables comes before a second of any set', () => {
    const turns = [
      candidate('SELECT * FROM airlines', 'airlines', 2 / 61),
      candidate('SELECT name FROM airlines', 'airlines', 1.9 / 61),
      candidate('SELECT * FROM flights', 'flights', 1 / 61),
    ];
    expect(rerankSimilar('anything', turns, 2, TODAY).map((t) => t.tables)).toEqual(['airlines', 'flights']);
  });
});
