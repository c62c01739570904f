import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SqlWarehouse, sqlAnswererEnv, startSqlWarehouse } from '../../../support/databases/sql-warehouse.js';
import { freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';
import type { RecordedRequest } from '../../../support/fakes/fake-http-server.js';
import { startFakeOpenAI } from '../../../support/fakes/fake-llm.js';
import { startFakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

/**
 * Recall bounded by answerer (docs/design.md §5): every turn records who wrote its SQL, and
 * /memoryChat recalls across sessions only turns of its own answerer (or turns a client stored
 * through the memory API). One memory database serves an upstream answerer, then the built-in SQL
 * answerer: the SQL answerer's LLM prompt never carries the upstream's SQL ("year = 2024", for
 * another schema), while it does carry its own earlier SQL, and the upstream answerer, back again at
 * the same URL, still recalls its own.
 */
const SQL_2024 =
  "SELECT region, SUM(amount) AS total_sales FROM demo.sales WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01' GROUP BY region ORDER BY region";

describe('cross-session recall bounded by answerer', () => {
  let database: TestDatabase;
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let llm: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  const prompts: RecordedRequest[] = [];
  const apps: TestApp[] = [];

  const start = async (env: Record<string, string>) => {
    const t = await startTestApp(env, { testDatabase: database, keepTestDatabase: true });
    apps.push(t);
    return t;
  };
  const stop = async (t: TestApp) => {
    apps.splice(apps.indexOf(t), 1);
    await t.close();
  };

  beforeAll(async () => {
    database = await freshTestDatabase();
    upstream = await startFakeUpstream();
    llm = await startFakeOpenAI((request) => {
      prompts.push(request);
      return { structured: { kind: 'sql', sql: SQL_2024, explanation: 'Sums sales per region.', tables: ['demo.sales'] } };
    });
    warehouse = await startSqlWarehouse();
  });
  afterAll(async () => {
    for (const t of apps) await t.close();
    await warehouse?.remove();
    await llm?.close();
    await upstream?.close();
    await database?.remove();
  });

  const ask = (t: TestApp, question: string, session_key: string) =>
    t.request('POST', '/memoryChat', { token: t.token('switcher'), body: { question, session_key } });
  const lastPrompt = () => JSON.stringify(prompts.at(-1)?.body.messages);

  it('when the SQL answerer follows an upstream answerer, then its prompt carries its own SQL but never the upstream one', async () => {
    const before = await start({ ANSWER_URL: upstream.answerUrl });
    const upstreamTurn = await ask(before, 'Show me total sales by region for 2024', 'upstream-thread');
    expect(upstreamTurn.body.sql_query).toContain('year = 2024');
    const stored = await before.admin.query<{ answerer: string }>(`SELECT answerer FROM turns WHERE user_id = 'switcher'`);
    expect(stored.rows.map((r) => r.answerer)).toEqual([`upstream ${upstream.answerUrl}`]);
    await stop(before);

    const sql = await start(sqlAnswererEnv(warehouse, { provider: 'openai', baseURL: llm.baseURL }));
    const first = await ask(sql, 'Total sales by region in 2024?', 'sql-thread-1');
    expect(first.status).toBe(200);
    expect(first.body.memory_context_used.similar_queries_count).toBe(0);
    expect(lastPrompt()).toContain('Total sales by region in 2024?');
    expect(lastPrompt()).not.toContain('year = 2024');

    // Its own turn of another session is recalled: the check above is not blind.
    const second = await ask(sql, 'Show me total sales by region for 2024', 'sql-thread-2');
    expect(second.body.memory_context_used.similar_queries.map((q: { question: string }) => q.question)).toEqual([
      'Total sales by region in 2024?',
    ]);
    expect(lastPrompt()).toContain("order_date >= '2024-01-01'");
    expect(lastPrompt()).not.toContain('year = 2024');
    await stop(sql);

    // The upstream answerer at the same URL recalls its own turn again, and not the SQL answerer's.
    const after = await start({ ANSWER_URL: upstream.answerUrl });
    await ask(after, 'Total sales by region in 2024?', 'upstream-thread-2');
    const sent = JSON.stringify(upstream.lastBody());
    expect(sent).toContain('year = 2024');
    expect(sent).not.toContain('order_date');
  }, 180_000);

  it('when a client stored a turn through the memory API, then every answerer may recall it; a turn stored before answerers were recorded, none', async () => {
    const t = await start({ ANSWER_URL: upstream.answerUrl });
    const token = t.token('api-client');
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: { question: 'Total sales by region for 2021?', answer: 'EMEA 1.', sql_query: 'SELECT region FROM sales WHERE year = 2021' },
    });
    expect(stored.status).toBe(201);
    const legacy = await t.request('POST', '/sessions/turns', {
      token,
      body: { question: 'Total sales by region for 2020?', answer: 'EMEA 2.', sql_query: 'SELECT region FROM sales WHERE year = 2020' },
    });
    // As migration 015 leaves the turns stored before it.
    await t.admin.query(`UPDATE turns SET answerer = 'unrecorded' WHERE user_id = 'api-client' AND session_id = $1`, [
      legacy.body.session.session_id,
    ]);
    const rows = await t.admin.query<{ answerer: string | null }>(
      `SELECT answerer FROM turns WHERE user_id = 'api-client' ORDER BY answerer`,
    );
    expect(rows.rows.map((r) => r.answerer)).toEqual(['unrecorded', null]);

    await t.request('POST', '/memoryChat', { token, body: { question: 'Total sales by region for 2022?' } });
    const sent = JSON.stringify(upstream.lastBody());
    expect(sent).toContain('year = 2021');
    expect(sent).not.toContain('year = 2020');
    await stop(t);
  });
});
