import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SqlWarehouse, sqlAnswererEnv, startSqlWarehouse } from '../../../../support/databases/sql-warehouse.js';
import { startFakeOpenAI } from '../../../../support/fakes/fake-llm.js';
import { sqlByQuestion } from '../../../../support/fakes/sql-llm-by-question.js';
import { startTestApp, type TestApp } from '../../../../support/service/test-app.js';

/*
 * Results are bounded in bytes while they are fetched, not after: five values of 100 MB each grew the
 * API to 3.1 GB and failed its reply after the turn was stored. The API runs in this test's process,
 * so its RSS is this process's, sampled while the question is answered.
 */
const HUGE = "SELECT repeat('x', 100000000) AS filler FROM generate_series(1, 5)";
const MANY = "SELECT g AS n, repeat('y', 10000) AS text FROM generate_series(1, 1000) AS g";
const UNICODE = "SELECT repeat('é', 100) AS accents, NULL::text AS nothing, ROW(NULL, NULL) AS pair";

describe('the sql answerer: results bounded in bytes while fetching', () => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  let t: TestApp;

  beforeAll(async () => {
    fake = await startFakeOpenAI(sqlByQuestion({ 'huge values': HUGE, 'many rows': MANY, accents: UNICODE }));
    warehouse = await startSqlWarehouse();
    t = await startTestApp({
      ...sqlAnswererEnv(warehouse, { provider: 'openai', baseURL: fake.baseURL }),
      SQL_STATEMENT_TIMEOUT_MS: '100000',
      SQL_POOL_WAIT_MS: '100000',
      SQL_MAX_CELL_BYTES: '1000',
      SQL_MAX_RESULT_BYTES: '50000',
      ...(warehouse.embedded ? {} : { SQL_MAX_PLAN_COST: '20000' }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await warehouse?.remove();
    await fake?.close();
  });

  const ask = (question: string) => t.request('POST', '/memoryChat', { token: t.token('alice'), body: { question } });

  it('when the LLM selects five values of 100 MB, then each is cut with a marker, the API stays small, and the turn is stored and answered', async () => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    let reply: Awaited<ReturnType<typeof ask>>;
    try {
      reply = await ask('show me the huge values');
    } finally {
      clearInterval(sampler);
    }
    const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
    console.log(
      `API RSS while five 100 MB values were fetched: ${mb(before)} MB before, ${mb(peak)} MB at the peak (+${mb(peak - before)} MB)`,
    );

    expect(reply.status).toBe(200);
    const rows = Object.values(reply.body.execution_result) as { columnName: string; value: string }[][];
    expect(rows).toHaveLength(5);
    for (const [cell] of rows) {
      expect(cell!.value).toBe(`${'x'.repeat(1000)}… [cut: 100000000 bytes, the first 1000 kept]`);
    }
    expect(reply.body.cells_cut_to_bytes).toBe(1000);
    expect(reply.body.answer).toContain('5 values were longer than 1000 bytes and cut');
    const stored = await t.admin.query('SELECT status, length(answer) AS answer_chars FROM turns WHERE session_id = $1', [
      reply.body.conversation_metadata.conversation_id,
    ]);
    expect(stored.rows).toEqual([{ status: 'ok', answer_chars: reply.body.answer.length }]);
    expect(peak - before).toBeLessThan(300 * 1024 * 1024);
  }, 300_000);

  it('when the rows together pass SQL_MAX_RESULT_BYTES, then the rows past it are left out and the reply says so', async () => {
    const reply = await ask('list many rows');
    expect(reply.status).toBe(200);
    const rows = Object.values(reply.body.execution_result) as { value: string }[][];
    // About 1050 bytes a row (its number, the value cut to 1000 bytes and the marker): some 47 rows.
    const bytes = rows.reduce((sum, row) => sum + row.reduce((s, cell) => s + Buffer.byteLength(cell.value), 0), 0);
    expect(bytes).toBeLessThanOrEqual(50_000);
    expect(rows.length).toBeGreaterThan(40);
    expect(rows.length).toBeLessThan(100);
    expect(reply.body.result_bytes_limited_to).toBe(50_000);
    expect(reply.body.rows_limited_to).toBeUndefined();
    expect(reply.body.answer).toMatch(
      new RegExp(`Showing 10 of the first ${rows.length} rows; the rest of the result was left out at 50000 bytes\\.`),
    );
  }, 120_000);

  it('when values are short, NULL or rows of NULLs, then they come back whole and as Postgres prints them', async () => {
    const reply = await ask('the accents');
    expect(reply.status).toBe(200);
    expect(reply.body.execution_result['Row 1']).toEqual([
      { columnName: 'accents', value: 'é'.repeat(100) },
      { columnName: 'nothing', value: null },
      { columnName: 'pair', value: '(,)' },
    ]);
    expect(reply.body.cells_cut_to_bytes).toBeUndefined();
  }, 120_000);
});
