import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type SqlWarehouse, sqlAnswererEnv, startSqlWarehouse } from '../../../../support/databases/sql-warehouse.js';
import type { RecordedRequest } from '../../../../support/fakes/fake-http-server.js';
import { type LlmReply, startFakeAnthropic, startFakeOpenAI } from '../../../../support/fakes/fake-llm.js';
import { startTestApp, type TestApp } from '../../../../support/service/test-app.js';

/** The server project provides its database server (test/support/vitest/global-setup-server.ts). */
const ON_SERVER = inject('serverDatabase') !== undefined;

/*
 * ANSWER_BACKEND=sql end to end: the real openai and @anthropic-ai/sdk clients against local fakes
 * that return scripted SQL, the statements run on the demo dataset (embedded-demo in the embedded
 * project, a warehouse database of the test's own on the PostgreSQL server in the server project).
 */

const SALES_2024 =
  "SELECT region, SUM(amount) AS total_sales FROM demo.sales WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01' GROUP BY region ORDER BY region";
const SALES_2023 = SALES_2024.replace("'2024-01-01'", "'2023-01-01'").replace("'2025-01-01'", "'2024-01-01'");
const WRONG_COLUMN = SALES_2024.replace('SUM(amount)', 'SUM(total)');

type Structured = { kind: 'sql' | 'clarification'; sql: string; explanation: string; tables: string[] };
const sqlReply = (sql: string, tables = ['demo.sales']): Structured => ({
  kind: 'sql',
  sql,
  explanation: 'Total sales per region.',
  tables,
});

/** What the fake LLM answers, one scripted reply per call, in order. */
class Script {
  private replies: Structured[] = [];
  readonly requests: RecordedRequest[] = [];
  next(...replies: Structured[]) {
    this.replies = replies;
    this.requests.length = 0;
  }
  readonly reply: LlmReply = (request) => {
    this.requests.push(request);
    const structured = this.replies.shift();
    if (!structured) return { status: 500, body: { error: { message: 'no scripted reply left', type: 'server_error' } } };
    return { structured };
  };
}

/** What the SDK sent as the prompt, whatever the provider: system and user text. */
function promptOf(request: RecordedRequest): { system: string; user: string } {
  if (Array.isArray(request.body.messages) && request.body.messages[0]?.role === 'system') {
    return { system: request.body.messages[0].content, user: request.body.messages[1].content };
  }
  return { system: request.body.system, user: request.body.messages[0].content };
}

const PROVIDERS = ['openai', 'anthropic'] as const;

describe.each(PROVIDERS)('the sql answerer with %s', (provider) => {
  const script = new Script();
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  let t: TestApp;
  /** Where the demo data is: the server's warehouse, or the embedded demo's engine. */
  let data: (query: pg.QueryArrayConfig) => Promise<pg.QueryArrayResult>;

  beforeAll(async () => {
    fake = provider === 'openai' ? await startFakeOpenAI(script.reply) : await startFakeAnthropic(script.reply);
    warehouse = await startSqlWarehouse();
    t = await startTestApp({
      ...sqlAnswererEnv(warehouse, { provider, baseURL: fake.baseURL }),
      // On the embedded demo the timeout restarts the engine: a loaded machine must not reach it by planning.
      SQL_STATEMENT_TIMEOUT_MS: warehouse.embedded ? '20000' : '2000',
    });
    data = warehouse.pool
      ? (query) => warehouse.pool!.query(query)
      : async (query) => {
          const client = await t.demoEngine!.connect();
          try {
            return await client.query(query);
          } finally {
            client.release();
          }
        };
  });
  afterAll(async () => {
    await t?.close();
    await warehouse?.remove();
    await fake?.close();
  });

  const ask = (body: Record<string, unknown>, sub = 'alice') => t.request('POST', '/memoryChat', { token: t.token(sub), body });
  const statusOf = async (sessionId: string) =>
    (await t.admin.query('SELECT status FROM turns WHERE session_id = $1 ORDER BY turn_number DESC LIMIT 1', [sessionId])).rows[0]?.status;
  const rowsOf = async (sql: string) =>
    (await data({ text: sql, rowMode: 'array', types: { getTypeParser: () => (v: string) => v } as any })).rows;

  it('when the first SQL names a column that does not exist, then the LLM gets the error, corrects it, and the rows answer', async () => {
    script.next(sqlReply(WRONG_COLUMN), sqlReply(SALES_2024));
    const reply = await ask({ question: 'Show me total sales by region for 2024' });

    expect(reply.status).toBe(200);
    expect(script.requests).toHaveLength(2);
    expect(promptOf(script.requests[1]!).user).toContain(WRONG_COLUMN);
    expect(promptOf(script.requests[1]!).user).toMatch(/column "total" does not exist/);
    expect(reply.body.sql_query).toBe(SALES_2024);
    expect(reply.body.tables_used).toEqual(['demo.sales']);
    const expected = await rowsOf(SALES_2024);
    expect(expected).toHaveLength(4);
    expect(Object.keys(reply.body.execution_result)).toHaveLength(4);
    const [region, total] = expected[0]!;
    expect(reply.body.execution_result['Row 1']).toEqual([
      { columnName: 'region', value: region },
      { columnName: 'total_sales', value: total },
    ]);
    expect(reply.body.answer).toContain(`| ${region} | ${total} |`);
    expect(reply.body.tokens.total_tokens).toBe(30);
    expect(reply.body.llm_time).toBeTypeOf('number');
    const sessionId = reply.body.conversation_metadata.conversation_id;
    expect(await statusOf(sessionId)).toBe('ok');

    // Stored in the Denodo shape: SQL recall and CSV export read it as they read an upstream turn.
    const recalled = await t.request('GET', `/sessions/${sessionId}/turns/last/sql`, { token: t.token('alice') });
    expect(recalled.body.sql_query).toBe(SALES_2024);
    const csv = await t.request('GET', `/sessions/${sessionId}/turns/1/result.csv`, { token: t.token('alice') });
    expect(csv.body).toBe(`region,total_sales\n${expected.map((r) => r.join(',')).join('\n')}\n`);
  });

  it('when the SQL names its column with a formula behind a byte-order mark, then result.csv writes it as text', async () => {
    const hostile = 'SELECT 1 AS "\uFEFF=HYPERLINK(B1)"';
    script.next(sqlReply(hostile));
    const reply = await ask({ question: 'Give me a link' });
    expect(reply.status).toBe(200);
    expect(reply.body.sql_query).toBe(hostile);
    const sessionId = reply.body.conversation_metadata.conversation_id;
    const res = await fetch(`${t.baseUrl}/sessions/${sessionId}/turns/last/result.csv`, {
      headers: { authorization: `Bearer ${t.token('alice')}` },
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 4).toString('hex')).not.toBe('efbbbf3d');
    expect(new TextDecoder().decode(bytes)).toBe("'\uFEFF=HYPERLINK(B1)\n1\n");
  });

  it('when the follow-up is "what about 2023?", then the prompt carries the previous question and its SQL, and only the allow-listed schema', async () => {
    script.next(sqlReply(SALES_2024));
    const first = await ask({ question: 'Total sales by region in 2024, please' }, 'bob');
    script.next(sqlReply(SALES_2023));
    const reply = await ask({ question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id }, 'bob');

    expect(reply.status).toBe(200);
    const { system, user } = promptOf(script.requests[0]!);
    expect(user).toContain('Total sales by region in 2024, please');
    expect(user).toContain(`SQL: ${SALES_2024}`);
    expect(user.endsWith('Question: What about 2023?')).toBe(true);
    expect(system).toContain('demo.sales(');
    expect(system).toContain('demo.order_lines(order_id integer → demo.orders(order_id)');
    expect(system).not.toMatch(/\bturns\b|\bsessions\b|idempotency/);
    expect(Object.keys(reply.body.execution_result)).toHaveLength((await rowsOf(SALES_2023)).length);
    expect(reply.body.execution_result['Row 1'][1].value).toBe((await rowsOf(SALES_2023))[0]![1]);
  });

  it('when a new conversation asks something asked before, then the prompt carries the similar past question and its SQL', async () => {
    script.next(sqlReply(SALES_2024));
    expect((await ask({ question: 'Show me total sales by region for 2024' }, 'carol')).status).toBe(200);
    script.next(sqlReply(SALES_2023));
    const reply = await ask({ question: 'Show me total sales by region for 2023' }, 'carol');

    expect(reply.status).toBe(200);
    expect(reply.body.memory_context_used.similar_queries_count).toBe(1);
    const { user } = promptOf(script.requests[0]!);
    expect(user).toContain('Related questions this user asked before, with the SQL that answered them:');
    expect(user).toContain(`SQL: ${SALES_2024}`);
  });

  it('when the LLM writes, then the database refuses it, the answer says so, and nothing changed', async () => {
    const before = await rowsOf('SELECT count(*) FROM demo.order_lines');
    const writes = [
      'DELETE FROM demo.order_lines',
      'WITH gone AS (DELETE FROM demo.order_lines RETURNING order_id) SELECT count(*) FROM gone',
      'SELECT order_id FROM demo.orders FOR UPDATE',
      'SELECT 1; DELETE FROM demo.order_lines',
    ];
    for (const write of writes) {
      // Twice: a statement the database reads as an error, not a refusal, is sent back to the LLM once.
      script.next(sqlReply(write, ['demo.order_lines']), sqlReply(write, ['demo.order_lines']));
      const reply = await ask({ question: 'Remove all order lines' });
      expect(reply.status, write).toBe(200);
      if (write.startsWith('SELECT 1;')) {
        // Two statements: the extended protocol refuses them; that is an error the LLM may correct.
        expect(reply.body.sql_error, write).toMatch(/multiple commands/);
        continue;
      }
      expect(script.requests, write).toHaveLength(1);
      expect(reply.body.answer, write).toMatch(/^The database refused this query: only reading data is allowed here/);
      expect(reply.body.sql_error, write).toBeTypeOf('string');
      expect(await statusOf(reply.body.conversation_metadata.conversation_id), write).toBe('failed');
    }
    expect(await rowsOf('SELECT count(*) FROM demo.order_lines')).toEqual(before);
  });

  it('when the question is ambiguous, then the LLM asks back, the reply marks it, and the user’s answer is asked with the question it clarifies', async () => {
    script.next({ kind: 'clarification', sql: '', explanation: 'Which year do you mean?', tables: [] });
    const reply = await ask({ question: 'How did we do?' });
    expect(reply.status).toBe(200);
    expect(reply.body.answer).toBe('Which year do you mean?');
    expect(reply.body.sql_query).toBe('');
    expect(reply.body.asks_clarification).toBe(true);
    expect(await statusOf(reply.body.conversation_metadata.conversation_id)).toBe('clarification');

    script.next(sqlReply('SELECT sum(amount) FROM demo.order_lines', ['demo.order_lines']));
    const answered = await ask({ question: '2024', session_id: reply.body.conversation_metadata.conversation_id });
    expect(answered.body).not.toHaveProperty('asks_clarification');
    const { user } = promptOf(script.requests[0]!);
    expect(user).toContain('Question: How did we do?');
    expect(user).toContain('Clarifying question asked, answered by the next question: Which year do you mean?');
  });

  it('when the result has more rows than SQL_MAX_ROWS, then at most that many are kept and the reply says it was cut', async () => {
    script.next(sqlReply('SELECT order_id, amount FROM demo.order_lines ORDER BY order_id, line_number', ['demo.order_lines']));
    const reply = await ask({ question: 'List every order line' });
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.body.execution_result)).toHaveLength(100);
    expect(reply.body.rows_limited_to).toBe(100);
    expect(reply.body.answer).toMatch(/Showing 10 rows; the result has more than 100\./);
  });

  it('when the LLM is unreachable or answers garbage, then the request fails as an answerer failure, not a 500', async () => {
    script.next();
    const failed = await ask({ question: 'Total sales in 2024?' });
    expect(failed.status).toBe(502);
    expect(failed.body.code).toBe('upstream-failed');
    script.next({ kind: 'nonsense' } as unknown as Structured);
    const garbage = await ask({ question: 'Total sales in 2024?' });
    expect(garbage.status).toBe(502);
    expect(garbage.body.code).toBe('upstream-bad-response');
  });
});

describe('the sql answerer: limits the database enforces', () => {
  const script = new Script();
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  let t: TestApp;

  beforeAll(async () => {
    fake = await startFakeOpenAI(script.reply);
    warehouse = await startSqlWarehouse();
    t = await startTestApp({
      ...sqlAnswererEnv(warehouse, { provider: 'openai', baseURL: fake.baseURL }),
      // The timeout is tested on a server (below) and on the embedded demo in sql-answerer-isolation.test.ts.
      SQL_STATEMENT_TIMEOUT_MS: warehouse.embedded ? '20000' : '500',
      // embedded-demo's default; a server has none unless set.
      ...(warehouse.embedded ? {} : { SQL_MAX_PLAN_COST: '20000' }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await warehouse?.remove();
    await fake?.close();
  });

  const ask = (question: string, sql: string) => {
    script.next(sqlReply(sql), sqlReply(sql));
    return t.request('POST', '/memoryChat', { token: t.token('alice'), body: { question } });
  };

  it('when the planner prices the query above SQL_MAX_PLAN_COST, then it is not run and the LLM is asked for a cheaper one', async () => {
    const cartesian = 'SELECT count(*) FROM demo.order_lines a, demo.order_lines b';
    const reply = await ask('Count everything with everything', cartesian);
    expect(reply.status).toBe(200);
    expect(script.requests).toHaveLength(2);
    expect(promptOf(script.requests[1]!).user).toMatch(/above the limit of 20000/);
    expect(reply.body.answer).toMatch(/^The query failed and could not be corrected: the planner estimates this query at cost \d+/);
  });

  // PGlite does not enforce statement_timeout (WebAssembly has no timer interrupt): the embedded demo
  // withdraws pg_sleep instead (below).
  it.runIf(ON_SERVER)(
    'when the query runs past SQL_STATEMENT_TIMEOUT_MS, then the database cancels it and the answer says so, without a repair',
    async () => {
      const reply = await ask('Sleep on it', 'SELECT pg_sleep(30)');
      expect(reply.status).toBe(200);
      expect(script.requests).toHaveLength(1);
      expect(reply.body.answer).toMatch(/^The query ran longer than 500 ms and the database cancelled it/);
      expect(reply.body.sql_error).toMatch(/statement timeout/);
    },
  );

  it.runIf(!ON_SERVER)('when the query sleeps on the embedded demo, then pg_sleep is refused', async () => {
    const reply = await ask('Sleep on it', 'SELECT pg_sleep(30)');
    expect(reply.status).toBe(200);
    expect(reply.body.answer).toMatch(/^The database refused this query/);
    expect(reply.body.sql_error).toMatch(/permission denied for function pg_sleep/);
  });

  it.runIf(!ON_SERVER)(
    'when the SQL reaches for the memory tables on the embedded demo, then the reader role cannot read them, even by switching roles inside the query',
    async () => {
      script.next(sqlReply(SALES_2024));
      expect(
        (await t.request('POST', '/memoryChat', { token: t.token('bob'), body: { question: 'bob-secret-question about sales' } })).status,
      ).toBe(200);
      for (const sql of [
        'SELECT question FROM public.turns',
        "SELECT set_config('role', 'postgres', true), query_to_xml('SELECT question FROM public.turns', true, false, '')",
        'SELECT question FROM turns',
      ]) {
        const reply = await ask('Show me the rows of the turns table', sql);
        expect(reply.status, sql).toBe(200);
        expect(JSON.stringify(reply.body), sql).not.toContain('bob-secret-question');
        expect(reply.body.sql_error, sql).toMatch(/permission denied|does not exist/);
      }
    },
  );

  it.runIf(!ON_SERVER)(
    'when the embedded demo runs, then the memory database holds no demo schema: the demo is in an engine of its own',
    async () => {
      expect((await t.admin.query("SELECT nspname FROM pg_namespace WHERE nspname = 'demo'")).rows).toEqual([]);
      expect((await t.admin.query('SELECT count(*)::int AS n FROM turns')).rows[0].n).toBeGreaterThan(0);
    },
  );
});
