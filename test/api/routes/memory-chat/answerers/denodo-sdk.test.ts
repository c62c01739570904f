import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  basicAuth,
  type DenodoSdkStandIn,
  SDK_RELEASES,
  type SdkRelease,
  type SdkView,
  startDenodoSdkStandIn,
} from '../../../../support/fakes/denodo-sdk-stand-in.js';
import { startTestApp, type TestApp } from '../../../../support/service/test-app.js';

/**
 * /memoryChat in front of a stand-in built from the Denodo AI SDK's source (test/support/fakes/denodo-sdk-stand-in.ts),
 * with memorychat's defaults: ANSWER_AUTH unset, MEMORY_AUGMENTATION=instructions, ANSWER_LIST_FIELDS unset.
 * Every release the stand-in knows: memorychat is told none of them.
 */

const columns = (...names: string[]) => names.map((name) => ({ name }));
// The view search returns the 5 nearest views: for a question naming none of them ("What about 2023?")
// those are the first five, and sales_db.sales is not among them.
const VIEWS: SdkView[] = [
  { name: 'hr_db.employees', columns: columns('employee_id', 'name', 'department') },
  { name: 'hr_db.departments', columns: columns('department_id', 'department_name') },
  { name: 'sales_db.customers', columns: columns('customer_id', 'customer_name', 'country') },
  { name: 'sales_db.products', columns: columns('product_id', 'product_name', 'category') },
  { name: 'sales_db.stores', columns: columns('store_id', 'city') },
  { name: 'sales_db.sales', description: 'Sales amounts per region', columns: columns('region', 'amount', 'year') },
];
const ALL = VIEWS.map((v) => v.name);
const USERS = {
  alice: { password: 'alice-pw', views: ALL },
  bob: { password: 'bob-pw', views: ALL.filter((v) => v !== 'sales_db.sales') },
  nobody: { password: 'nobody-pw', views: [] },
  tina: { token: 'tina-token', views: ALL },
};
const ALICE = basicAuth('alice', 'alice-pw');

/** The SDK's LLM finds this question ambiguous (its ambiguity check, 0.13 on): which year? */
const AMBIGUOUS = 'Show me total sales by region';
const clarify = (question: string) =>
  question === AMBIGUOUS ? { type: 'TEMP' as const, question: 'Which year should the totals cover?' } : undefined;

/** A list field as the release takes it: a JSON list in 1.4, a comma-separated string before. */
const asSent = (release: SdkRelease, values: string[]) => (release === '1.4' ? values : values.join(','));
const listOf = (sent: unknown) => (Array.isArray(sent) ? sent : String(sent).split(',')).map((v) => String(v).trim());

// One memorychat whose SDK is upgraded release by release, oldest first (one app: each costs seconds on
// the embedded database). It learns comma-separated strings at first contact (0.5's /openapi.json) and
// lists from 1.4's first 422; upstream-list-fields.test.ts covers first contact with each release.
describe('/memoryChat in front of the Denodo AI SDK, release by release', () => {
  let sdk: DenodoSdkStandIn;
  let t: TestApp;

  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS, release: SDK_RELEASES[0], clarify, maskedViews: ['sales_db.sales'] });
    // ANSWER_AUTH unset, as a new deployment has it (startTestApp sets `none` for the suite's fakes).
    t = await startTestApp({ ANSWER_URL: sdk.answerUrl, ANSWER_AUTH: undefined });
  });
  afterAll(async () => {
    await t?.close();
    await sdk?.close();
  });

  describe.each(SDK_RELEASES)('%s', (release) => {
    beforeAll(() => sdk.useRelease(release));

    // Each release's users are its own, so one release's turns are not memory in the next's checks.
    const user = (name: string) => `${name}-r${release.replaceAll('.', '')}`;
    const chat = (sub: string, body: Record<string, unknown>, credentials: string | null = ALICE) =>
      t.request('POST', '/memoryChat', {
        token: t.token(user(sub)),
        body,
        headers: credentials ? { 'x-upstream-authorization': credentials } : {},
      });

    it('when a follow-up names no view, then the views of the earlier SQL go as use_views and the SDK answers it with the right SQL', async () => {
      const first = await chat('follow', { question: 'Total sales by region for 2024' });
      expect(first.status).toBe(200);
      expect(first.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024');

      const next = await chat('follow', { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id });
      expect(next.status).toBe(200);
      expect(next.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2023');
      expect(sdk.calls.at(-1)).toMatchObject({
        user: 'alice',
        body: { question: 'What about 2023?', use_views: asSent(release, ['sales_db.sales']) },
      });
      expect(next.body.memory_context_used.use_views).toBe('sales_db.sales');
      // One question followed through both services' logs: memorychat's request id is the SDK's transaction header.
      expect(sdk.calls.at(-1)!.headers['x-transaction-id']).toBe(next.headers.get('x-request-id'));
    });

    it.skipIf(release === '0.5')(
      "when the SDK asks a clarifying question, then the reply marks it, and the user's answer goes with the question it clarifies and the candidate views, and is answered with its SQL",
      async () => {
        const asked = await chat('clarify', { question: AMBIGUOUS });
        expect(asked.status).toBe(200);
        expect(asked.body).toMatchObject({ asks_clarification: true, sql_query: '' });
        expect(asked.body.answer).toContain('Temporal ambiguity: Which year should the totals cover?');
        const session_id = asked.body.conversation_metadata.conversation_id;

        const answered = await chat('clarify', { question: '2024 please', session_id });
        expect(answered.status).toBe(200);
        expect(answered.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024');
        expect(answered.body).not.toHaveProperty('asks_clarification');
        const call = sdk.calls.at(-1)!;
        // The view search on "2024 please" alone does not find the sales view: the candidates pinned bring it.
        expect(call.searched).not.toContain('sales_db.sales');
        expect(listOf(call.body.use_views)).toEqual(asked.body.tables_used);
        expect(call.body.custom_instructions).toContain(AMBIGUOUS);
        expect(call.body.custom_instructions).toContain('Clarifying question asked, answered by the next question:');
        expect(call.body.custom_instructions).toContain('Which year should the totals cover?');

        // The clarification never feeds "show SQL": the last SQL is the answered one.
        const shown = await chat('clarify', { question: 'show me the SQL', session_id });
        expect(shown.body.sql_query).toBe(answered.body.sql_query);
        const { rows } = await t.admin.query(
          `SELECT status, metadata FROM turns WHERE user_id = '${user('clarify')}' ORDER BY turn_number`,
        );
        expect(rows.map((r) => [r.status, r.metadata.asks_clarification ?? false])).toEqual([
          ['clarification', true],
          ['ok', false],
          ['memory_command', false],
        ]);
      },
    );

    it('when the newer answerQuestion fields are given, then they reach the SDK as given, a value no release takes is a 400, and an answer from masked rows is stored as such', async () => {
      const newer = {
        filter_logic: 'AND',
        check_ambiguity: false,
        vql_execute_rows_limit: 50,
        enable_query_fixer: false,
        auto_fixing_attempts: 3,
        enable_query_reviewer: true,
      };
      const reply = await chat('newer', { question: 'Total sales by region for 2024', ...newer });
      expect(reply.status).toBe(200);
      expect(sdk.calls.at(-1)!.body).toMatchObject(newer);
      const { rows } = await t.admin.query(`SELECT metadata FROM turns WHERE user_id = '${user('newer')}'`);
      if (release === '1.4') {
        expect(reply.body.is_masked).toBe(true);
        expect(rows).toEqual([{ metadata: { is_masked: true } }]);
      } else {
        expect(reply.body).not.toHaveProperty('is_masked');
        expect(rows).toEqual([{ metadata: {} }]);
      }

      const calls = sdk.calls.length;
      const wrong = await chat('newer', { question: 'Total sales by region for 2024', filter_logic: 'XOR' });
      expect(wrong.status).toBe(400);
      expect(wrong.body).toMatchObject({ code: 'validation-failed' });
      expect(sdk.calls).toHaveLength(calls);
    });

    it("when a result is exported with ?fresh=true and ANSWER_EXECUTE_URL is unset, then the SDK's /executeVQL re-runs it with the caller's credentials, from 1.2.1", async () => {
      const first = await chat('fresh', { question: 'Total sales by region for 2024' });
      const csv = await t.request('GET', `/sessions/${first.body.conversation_metadata.conversation_id}/turns/last/result.csv?fresh=true`, {
        token: t.token(user('fresh')),
        headers: { 'x-upstream-authorization': ALICE },
      });
      if (release === '1.2.1' || release === '1.4') {
        expect(csv.status).toBe(200);
        const sent = sdk.requests.at(-1)!;
        expect([sent.path, sent.body.vql, sent.headers.authorization]).toEqual(['/executeVQL', first.body.sql_query, ALICE]);
      } else {
        expect([csv.status, csv.body.code]).toEqual([503, 'execute-not-configured']);
        expect(csv.body.detail).toContain('from 1.2.1');
      }
    });

    it("when the pinned views lie outside the caller's vdp_database_names, then they are not sent", async () => {
      const first = await chat('bounded', { question: 'Total sales by region for 2024' });
      const next = await chat('bounded', {
        question: 'What about 2023?',
        session_id: first.body.conversation_metadata.conversation_id,
        vdp_database_names: 'hr_db',
        use_views: 'hr_db.employees',
      });
      expect(next.status).toBe(200);
      expect(sdk.calls.at(-1)!.body.use_views).toEqual(asSent(release, ['hr_db.employees']));
      expect(next.body.sql_query).toBe('');
    });

    it('when ANSWER_AUTH is unset and the caller sends no X-Upstream-Authorization, then 400 naming the header', async () => {
      const reply = await chat('anonymous', { question: 'Total sales by region for 2024' }, null);
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: 'validation-failed' });
      expect(reply.body.detail).toContain('X-Upstream-Authorization');
    });

    it("when ANSWER_AUTH is unset, then each caller's credentials reach the SDK and its own VDP permissions apply", async () => {
      const bearer = await chat('tina', { question: 'Total sales by region for 2024' }, 'Bearer tina-token');
      expect(bearer.status).toBe(200);
      expect(sdk.calls.at(-1)!.user).toBe('tina');

      const bob = await chat('bob', { question: 'Total sales by region for 2024' }, basicAuth('bob', 'bob-pw'));
      expect(bob.status).toBe(200);
      expect(sdk.calls.at(-1)!.views).not.toContain('sales_db.sales');
      expect(bob.body.sql_query).not.toContain('sales_db');
    });

    it('when the SDK refuses the forwarded credentials, then 403 upstream-credentials-refused', async () => {
      const reply = await chat('wrong', { question: 'Total sales' }, basicAuth('alice', 'not-her-password'));
      expect(reply.status).toBe(403);
      expect(reply.body).toMatchObject({ code: 'upstream-credentials-refused' });
      expect(reply.body.detail).toContain('Unauthorized');
    });

    it('when the caller may read no views, then 403 upstream-no-views-permitted with the SDK message', async () => {
      const reply = await chat('nobody', { question: 'Total sales' }, basicAuth('nobody', 'nobody-pw'));
      expect(reply.status).toBe(403);
      expect(reply.body).toMatchObject({ code: 'upstream-no-views-permitted' });
      expect(reply.body.detail).toContain("You don't have permission to access any views in Denodo");
    });

    it("when the SDK's LLM is rate limited, then 503 upstream-rate-limited with its message and without its traceback", async () => {
      sdk.failLlmWith('Error code: 429 - Rate limit reached for gpt-4o in organization org-1 on tokens per min');
      try {
        const reply = await chat('limited', { question: 'Total sales' });
        expect(reply.status).toBe(503);
        expect(reply.body).toMatchObject({ code: 'upstream-rate-limited' });
        expect(reply.body.detail).toContain('Rate limit reached for gpt-4o');
        expect(JSON.stringify(reply.body)).not.toContain('Traceback');
      } finally {
        sdk.failLlmWith(undefined);
      }
    });

    it('when the view search finds nothing in the given databases, then the SDK message is the answer, stored as a clarification', async () => {
      const reply = await chat('nothing', { question: 'Total sales', vdp_database_names: 'no_such_db' });
      expect(reply.status).toBe(200);
      expect(reply.body.answer).toBe(
        'No relevant views found in the vector store matching your query with the specified database filters: "no_such_db". Try adjusting your filters or query.',
      );
      const { rows } = await t.admin.query(`SELECT status, answer FROM turns WHERE user_id = '${user('nothing')}'`);
      expect(rows).toEqual([{ status: 'clarification', answer: reply.body.answer }]);
    });

    it("when the SDK answers 422, then the problem lists the SDK's fields", async () => {
      const reply = await chat('typo', { question: 'Total sales', vector_search_k: 'many' });
      expect(reply.status).toBe(502);
      expect(reply.body).toMatchObject({
        code: 'upstream-rejected',
        errors: [{ field: 'body.vector_search_k', message: 'Input should be a valid integer, unable to parse string as an integer' }],
      });
    });

    it('when vdp_database_names, vdp_tag_names and use_views come as lists or as strings, then the SDK gets them in the form its release takes', async () => {
      const lists = await chat('lists', {
        question: 'Total sales by region',
        vdp_database_names: ['sales_db', 'hr_db'],
        vdp_tag_names: [],
        use_views: ['sales_db.stores'],
      });
      expect(lists.status).toBe(200);
      expect(sdk.calls.at(-1)!.body).toMatchObject({
        vdp_database_names: asSent(release, ['sales_db', 'hr_db']),
        vdp_tag_names: asSent(release, []),
        use_views: asSent(release, ['sales_db.stores']),
      });
      expect(lists.body.sql_query).toContain('"sales_db"."sales"');

      const strings = await chat('strings', {
        question: 'Total sales by region',
        vdp_database_names: 'sales_db, hr_db',
        use_views: 'sales_db.stores',
      });
      expect(strings.status).toBe(200);
      expect(sdk.calls.at(-1)!.body).toMatchObject({
        vdp_database_names: asSent(release, ['sales_db', 'hr_db']),
        use_views: asSent(release, ['sales_db.stores']),
      });
    });

    it('when the SDK appends its DISCLAIMER, then the caller sees it and the next memory block does not carry it', async () => {
      const first = await chat('disclaimed', { question: 'Total sales by region for 2024' });
      expect(first.body.answer).toContain('DISCLAIMER: This response has been generated');
      await chat('disclaimed', { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id });
      const sent = String(sdk.calls.at(-1)!.body.custom_instructions);
      expect(sent).toContain('From sales_db.sales');
      expect(sent).not.toContain('DISCLAIMER');
    });

    it("when the SDK's own /streamAnswerQuestion is asked, then it sends the answer's text alone, without SQL: why a streamed /memoryChat asks answerQuestion", async () => {
      const response = await fetch(sdk.streamUrl, {
        method: 'POST',
        headers: { authorization: ALICE, 'content-type': 'application/json' },
        body: JSON.stringify({ question: 'Total sales by region for 2024' }),
      });
      expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await response.text();
      expect(text).toContain('From sales_db.sales');
      expect(text).not.toContain('SELECT');
    });

    it('when a reply is streamed, then the stored turn is the same as a plain one: SQL, tables, tokens and status', async () => {
      const response = await fetch(`${t.baseUrl}/memoryChat`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t.token(user('streamer'))}`,
          'x-upstream-authorization': ALICE,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({ question: 'Total sales by region for 2024' }),
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('From sales_db.sales');
      expect(sdk.calls.at(-1)!.path).toBe('/answerQuestion');
      const { rows } = await t.admin.query(
        `SELECT status, sql_query, tables_used, tokens FROM turns WHERE user_id = '${user('streamer')}'`,
      );
      expect(rows).toEqual([
        {
          status: 'ok',
          sql_query: 'SELECT * FROM "sales_db"."sales" WHERE "year" = 2024',
          tables_used: sdk.calls.at(-1)!.views,
          tokens: expect.objectContaining({ total_tokens: expect.any(Number) }),
        },
      ]);
    });
  });
});

describe('/memoryChat in front of the Denodo AI SDK 0.5', () => {
  let sdk: DenodoSdkStandIn;
  let t: TestApp;
  const OPERATOR = 'Amounts are in euros.';

  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS, release: '0.5', operatorInstructions: OPERATOR });
    t = await startTestApp({ ANSWER_URL: sdk.answerUrl, ANSWER_AUTH: undefined, ANSWER_OPERATOR_INSTRUCTIONS: OPERATOR });
  });
  afterAll(async () => {
    await t?.close();
    await sdk?.close();
  });

  it("when memory goes into custom_instructions, then ANSWER_OPERATOR_INSTRUCTIONS keeps the operator's instructions the SDK would drop", async () => {
    const ask = (body: Record<string, unknown>) =>
      t.request('POST', '/memoryChat', { token: t.token('op'), body, headers: { 'x-upstream-authorization': ALICE } });
    const first = await ask({ question: 'Total sales by region for 2024' });
    expect(sdk.calls.at(-1)!.instructions).toBe(OPERATOR);
    const next = await ask({ question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id });
    expect(next.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2023');
    const { instructions } = sdk.calls.at(-1)!;
    expect(instructions.startsWith(`${OPERATOR}\n\n`)).toBe(true);
    expect(instructions).toContain('<conversation_memory>');
  });
});

// The oldest and the newest encoding of use_views.
describe.each(['0.5', '1.4'] as const)('/memoryChat in front of the Denodo AI SDK %s, with MEMORY_AUGMENTATION=inline', (release) => {
  let sdk: DenodoSdkStandIn;
  let t: TestApp;

  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS, release });
    t = await startTestApp({ ANSWER_URL: sdk.answerUrl, ANSWER_AUTH: undefined, MEMORY_AUGMENTATION: 'inline' });
  });
  afterAll(async () => {
    await t?.close();
    await sdk?.close();
  });

  it('when memory goes into the question, then the views of the earlier SQL still go as use_views', async () => {
    const ask = (body: Record<string, unknown>) =>
      t.request('POST', '/memoryChat', { token: t.token('inline'), body, headers: { 'x-upstream-authorization': ALICE } });
    const first = await ask({ question: 'Total sales by region for 2024' });
    await ask({ question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id });
    const call = sdk.calls.at(-1)!;
    expect(String(call.body.question)).toContain('Current question: What about 2023?');
    expect(call.body.use_views).toEqual(asSent(release, ['sales_db.sales']));
  });
});

// ANSWER_URL naming the SDK's metadata endpoint: answers from the views' schema, with no SQL.
describe('/memoryChat in front of the Denodo AI SDK 1.4 answerMetadataQuestion', () => {
  let sdk: DenodoSdkStandIn;
  let t: TestApp;

  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS, release: '1.4' });
    t = await startTestApp({ ANSWER_URL: sdk.metadataUrl, ANSWER_AUTH: undefined });
  });
  afterAll(async () => {
    await t?.close();
    await sdk?.close();
  });

  it('when a metadata question and its follow-up are asked, then the turn is stored without SQL and the follow-up carries it in memory', async () => {
    const ask = (body: Record<string, unknown>) =>
      t.request('POST', '/memoryChat', { token: t.token('meta'), body, headers: { 'x-upstream-authorization': ALICE } });
    const first = await ask({ question: 'Which views hold sales by region?' });
    expect(first.status).toBe(200);
    expect(first.body.sql_query).toBe('');
    expect(first.body.answer).toContain('sales_db.sales (region, amount, year)');
    const session = first.body.conversation_metadata.conversation_id;
    const sql = await t.request('GET', `/sessions/${session}/turns/last/sql`, { token: t.token('meta') });
    expect(sql.status).toBe(404);

    const next = await ask({ question: 'And which columns does it have?', session_id: session });
    expect(next.status).toBe(200);
    const call = sdk.calls.at(-1)!;
    expect(call.path).toBe('/answerMetadataQuestion');
    expect(String(call.body.custom_instructions)).toContain('Which views hold sales by region?');
    expect(next.body.memory_context_used.history_messages_count).toBe(1);
  });
});
