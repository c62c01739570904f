import { describe, expect, it } from 'vitest';
import { MAX_PINNED_VIEWS, pinnedViews } from '../../../services/core/chat/pinned-views.js';
import type { BuiltContext } from '../../../services/core/context/chat-block.js';
import type { HistoryTurn, SimilarTurn } from '../../../services/model/turns.js';

const turn = (n: number, tables: string[], status: HistoryTurn['status'] = 'ok'): HistoryTurn => ({
  turn_number: n,
  status,
  question: `question ${n}`,
  answer: 'answer',
  sql_query: status === 'ok' ? `SELECT * FROM ${tables.join(', ')}` : null,
  tables_used: tables,
  created_at: new Date(0),
});
const similar = (tables: string[]): SimilarTurn => ({ ...turn(9, tables), session_id: 's', similarity: 0.8 });
const context = (history: HistoryTurn[], similarTurns: SimilarTurn[] = []): BuiltContext => ({
  text: 'block',
  history,
  similar: similarTurns,
  pairs: [],
  summaryUsed: false,
  tokens: 10,
  truncated: false,
});

describe('pinnedViews', () => {
  it("when memory holds turns with SQL, then the caller's views come first, then the latest turn's, then older and similar ones, once each", () => {
    const built = context([turn(1, ['db.a', 'db.b']), turn(2, ['db.c', 'db.a'])], [similar(['db.d'])]);
    expect(pinnedViews(built, 'db.x, db.c', undefined)).toEqual(['db.x', 'db.c', 'db.a', 'db.b', 'db.d']);
  });

  it("when the caller's use_views is a list, then it is read as the comma-separated string is", () => {
    const built = context([turn(1, ['db.a'])]);
    expect(pinnedViews(built, ['db.x', ' db.c '], undefined)).toEqual(['db.x', 'db.c', 'db.a']);
  });

  it('when a turn has no SQL (a clarification), then its tables are not pinned', () => {
    expect(pinnedViews(context([turn(1, ['db.a'], 'clarification')]), undefined, undefined)).toBeUndefined();
  });

  it('when the latest turn asked a clarifying question, then its candidate views come after the caller’s, before those of earlier SQL; an older one’s are not pinned', () => {
    const asked = (n: number, tables: string[]): HistoryTurn => ({ ...turn(n, tables, 'clarification'), asks_clarification: true });
    expect(pinnedViews(context([turn(1, ['db.a']), asked(2, ['db.b', 'db.c'])]), 'db.x', undefined)).toEqual([
      'db.x',
      'db.b',
      'db.c',
      'db.a',
    ]);
    expect(pinnedViews(context([asked(1, ['db.b']), turn(2, ['db.a'])]), undefined, undefined)).toEqual(['db.a']);
  });

  it("when the caller names vdp_database_names, then only views of those databases are pinned; the caller's own are kept", () => {
    const built = context([turn(1, ['sales.a', 'hr.b', 'bare'])]);
    expect(pinnedViews(built, 'other.z', ['sales'])).toEqual(['other.z', 'sales.a']);
  });

  it('when a turn’s tables_used are every view its search considered (the Denodo AI SDK’s), then only those its SQL read are pinned', () => {
    const considered: HistoryTurn = { ...turn(1, ['db.a']), tables_used: ['db.x', 'db.y', 'db.a', 'db.z'] };
    const asked: HistoryTurn = { ...turn(2, ['db.b']), tables_used: ['db.b', 'db.w'] };
    expect(pinnedViews(context([considered, asked]), undefined, undefined)).toEqual(['db.b', 'db.a']);
  });

  it('when memory reads many views, then at most MAX_PINNED_VIEWS are pinned', () => {
    const many = Array.from({ length: 15 }, (_, i) => `db.v${i}`);
    expect(pinnedViews(context([turn(1, many)]), undefined, undefined)).toHaveLength(MAX_PINNED_VIEWS);
  });
});
