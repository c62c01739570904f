import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SqlWarehouse, sqlAnswererEnv, startSqlWarehouse } from '../../../../support/databases/sql-warehouse.js';
import type { RecordedRequest } from '../../../../support/fakes/fake-http-server.js';
import { startFakeAnthropic, startFakeOpenAI } from '../../../../support/fakes/fake-llm.js';
import { startTestApp, type TestApp } from '../../../../support/service/test-app.js';

/*
 * What the built-in SQL answerer asks a model for (docs/sql-answerer.md#the-llm-contract), and what it
 * does with a model that answers with text instead: bare or fenced SQL is run, anything else is a
 * clear 502 naming the JSON it needed. The real openai and @anthropic-ai/sdk clients talk to local fakes.
 */

const SALES_2024 =
  "SELECT region, SUM(amount) AS total_sales FROM demo.sales WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01' GROUP BY region ORDER BY region";

describe.each(['openai', 'anthropic'] as const)('the SQL answerer with %s when the model answers with text', (provider) => {
  let text = '';
  const requests: RecordedRequest[] = [];
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  let t: TestApp;

  beforeAll(async () => {
    const reply = (request: RecordedRequest) => {
      requests.push(request);
      return text;
    };
    fake = provider === 'openai' ? await startFakeOpenAI(reply) : await startFakeAnthropic(reply);
    warehouse = await startSqlWarehouse();
    t = await startTestApp({
      ...sqlAnswererEnv(warehouse, { provider, baseURL: fake.baseURL }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await warehouse?.remove();
    await fake?.close();
  });

  const ask = (question: string) => t.request('POST', '/memoryChat', { token: t.token('contract'), body: { question } });

  it('when the request goes out, then it asks for the documented JSON object', async () => {
    text = SALES_2024;
    requests.length = 0;
    await ask('Show me total sales by region for 2024');
    const body = requests[0]!.body;
    const schema = provider === 'openai' ? body.response_format.json_schema.schema : body.tools[0].input_schema;
    expect(schema.required).toEqual(['kind', 'sql', 'explanation', 'tables']);
    expect(schema.properties.kind.enum).toEqual(['sql', 'clarification']);
    if (provider === 'anthropic') expect(body.tool_choice).toEqual({ type: 'tool', name: 'answer_with_sql' });
  });

  it.each([
    ['bare SQL', SALES_2024],
    ['SQL with a semicolon', `${SALES_2024};`],
    ['SQL in a fenced block with prose around it', `Here is the query:\n\n\`\`\`sql\n${SALES_2024}\n\`\`\`\n\nIt sums sales per region.`],
  ])('when the model answers with %s, then the SQL runs and the turn is answered with its rows and tables', async (_name, reply) => {
    text = reply;
    const answered = await ask('Show me total sales by region for 2024');
    expect(answered.status).toBe(200);
    expect(answered.body.sql_query).toBe(SALES_2024);
    expect(answered.body.tables_used).toEqual(['demo.sales']);
    expect(answered.body.answer).toMatch(/\| region \| total_sales \|/);
  });

  it('when the model answers with prose and no SQL, then the reply is a 502 saying what the model must return', async () => {
    text = 'I am sorry, I cannot help with that.';
    const answered = await ask('Show me total sales by region for 2024');
    expect(answered.status).toBe(502);
    expect(answered.body.code).toBe('upstream-bad-response');
    expect(answered.body.detail).toContain('{"kind": "sql" | "clarification", "sql", "explanation", "tables"}');
    expect(answered.body.detail).toContain('I am sorry');
  });
});
