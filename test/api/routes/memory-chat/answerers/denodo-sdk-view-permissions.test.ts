import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, type DenodoSdkStandIn, type SdkView, startDenodoSdkStandIn } from '../../../../support/fakes/denodo-sdk-stand-in.js';
import { startTestApp, type TestApp } from '../../../../support/service/test-app.js';

/**
 * Memory only from views the user may read now: memorychat asks the Denodo AI SDK (the stand-in of
 * test/support/fakes/denodo-sdk-stand-in.ts) with the caller's own credentials, `getUserPermissions` and
 * then `executeVQL` per view, and leaves out every remembered turn over a view VDP no longer lets the
 * caller read. MEMORY_VIEW_PERMISSIONS_TTL (60s by default) bounds how long an answer is trusted.
 */

const columns = (...names: string[]) => names.map((name) => ({ name }));
const VIEWS: SdkView[] = [
  { name: 'hr_db.employees', columns: columns('employee_id', 'name', 'department') },
  { name: 'sales_db.customers', columns: columns('customer_id', 'customer_name', 'country') },
  { name: 'sales_db.sales', description: 'Sales amounts per region', columns: columns('region', 'amount', 'year') },
];
const ALL = VIEWS.map((v) => v.name);
const WITHOUT_SALES = ALL.filter((v) => v !== 'sales_db.sales');
const users = () => ({
  alice: { password: 'alice-pw', views: ALL },
  bob: { password: 'bob-pw', views: ALL },
  root: { password: 'root-pw', views: ALL, isAdmin: true, roles: ['admin'] },
});
const ALICE = basicAuth('alice', 'alice-pw');
const BOB = basicAuth('bob', 'bob-pw');
const TTL_MS = 60_000;

const SALES_2024 = 'Total sales by region for 2024';

describe('memory only from views the caller may read now (SDK 1.4)', () => {
  let sdk: DenodoSdkStandIn;
  let t: TestApp;

  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: users(), release: '1.4' });
    t = await startTestApp({ ANSWER_URL: sdk.answerUrl, ANSWER_AUTH: undefined });
  });
  afterAll(async () => {
    await t?.close();
    await sdk?.close();
  });

  const chat = (sub: string, credentials: string, body: Record<string, unknown>) =>
    t.request('POST', '/memoryChat', { token: t.token(sub), body, headers: { 'x-upstream-authorization': credentials } });
  const revokeSales = (user: string) => sdk.grant(user, WITHOUT_SALES);
  const restoreSales = (user: string) => sdk.grant(user, ALL);

  it('when a view is revoked between two questions, then the earlier turn over it leaves the memory block and use_views once the cached answer expires, and the reply counts it', async () => {
    const first = await chat('revoked', ALICE, { question: SALES_2024 });
    expect(first.status).toBe(200);
    // As the SDK's, the reply names every view its search considered; its SQL read one of them.
    expect(first.body.tables_used).toEqual(sdk.calls.at(-1)!.views);
    expect(first.body.tables_used).toHaveLength(3);
    expect(first.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024');
    const session_id = first.body.conversation_metadata.conversation_id;

    const carried = await chat('revoked', ALICE, { question: 'What about 2023?', session_id });
    expect(carried.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2023');
    expect(carried.body.memory_context_used).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 0, history_turns: [1] });
    // Asked with alice's own credentials: her profile, then the one view memory used, as a query returning no rows.
    expect(sdk.permissionLookups.at(-1)).toEqual({ user: 'alice' });
    expect(sdk.executions.at(-1)).toEqual({ user: 'alice', vql: 'SELECT * FROM "sales_db"."sales" WHERE 1 = 0' });

    revokeSales('alice');
    try {
      // Within MEMORY_VIEW_PERMISSIONS_TTL the answer already given stands (the bound the setting names).
      const cached = await t.request('POST', '/memory/search', {
        token: t.token('revoked'),
        body: { query: 'sales by region', k: 5 },
        headers: { 'x-upstream-authorization': ALICE },
      });
      expect(cached.body).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 0 });
      expect(cached.body.results).toHaveLength(2);

      t.clock.advance(TTL_MS + 1);
      const next = await chat('revoked', ALICE, { question: 'What about 2021?', session_id });
      expect(next.status).toBe(200);
      const used = next.body.memory_context_used;
      expect(used).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 2, history_turns: [] });
      expect(used).not.toHaveProperty('use_views');
      const call = sdk.calls.at(-1)!;
      expect(call.body.use_views ?? []).toEqual([]);
      expect(String(call.body.custom_instructions ?? '')).not.toContain('sales');
      expect(sdk.executions.at(-1)).toEqual({ user: 'alice', vql: 'SELECT * FROM "sales_db"."sales" WHERE 1 = 0' });
    } finally {
      restoreSales('alice');
    }
  });

  it('when one earlier turn is over a revoked view and another is not, then only that one is left out and the count says 1', async () => {
    const sales = await chat('one-of-two', ALICE, { question: SALES_2024 });
    const session_id = sales.body.conversation_metadata.conversation_id;
    const customers = await chat('one-of-two', ALICE, { question: 'List the customers by country', session_id });
    // The turn's search considered sales_db.sales too; its SQL did not read it.
    expect(customers.body.tables_used).toContain('sales_db.sales');
    expect(customers.body.sql_query).toBe('SELECT * FROM "sales_db"."customers"');

    revokeSales('alice');
    try {
      t.clock.advance(TTL_MS + 1);
      const next = await chat('one-of-two', ALICE, { question: 'And their names?', session_id });
      expect(next.body.memory_context_used).toMatchObject({
        view_permissions: 'checked',
        left_out_unreadable: 1,
        history_turns: [2],
        use_views: 'sales_db.customers',
      });
      expect(sdk.calls.at(-1)!.body.use_views).toEqual(['sales_db.customers']);
    } finally {
      restoreSales('alice');
    }
  });

  it("when a tenant's verified pair is over a view revoked for the asking user, then the pair leaves that user's memory block and use_views and is counted", async () => {
    // A tenant of its own: the pair is recalled for every user of its tenant, the other tests' users too.
    const chat = (sub: string, credentials: string, body: Record<string, unknown>) =>
      t.request('POST', '/memoryChat', {
        token: t.token(sub, { tenant: 'pairs' }),
        body,
        headers: { 'x-upstream-authorization': credentials },
      });
    const authored = await chat('pair-author', ALICE, { question: SALES_2024, vdp_database_names: 'sales_db' });
    expect(authored.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024');
    const promoted = await t.request('POST', '/admin/verified-pairs', {
      token: t.token('pairs-admin', { tenant: 'pairs', roles: ['memory-admin'] }),
      body: { user_id: 'pair-author', session_id: authored.body.conversation_metadata.conversation_id, turn_number: 1 },
    });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(201);

    const readable = await chat('pair-reader', BOB, { question: 'Total sales by region for 2022', vdp_database_names: 'sales_db' });
    expect(readable.body.memory_context_used).toMatchObject({
      view_permissions: 'checked',
      left_out_unreadable: 0,
      verified_pairs: [{ pair_id: promoted.body.pair.pair_id, views: ['sales_db.sales'] }],
    });

    revokeSales('bob');
    try {
      t.clock.advance(TTL_MS + 1);
      const next = await chat('pair-reader', BOB, { question: 'Total sales by region for 2021', vdp_database_names: 'sales_db' });
      expect(next.status).toBe(200);
      const used = next.body.memory_context_used;
      // The pair and bob's own earlier turn, both over the revoked view.
      expect(used).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 2 });
      expect(used.verified_pairs ?? []).toEqual([]);
      expect(sdk.calls.at(-1)!.body.use_views ?? []).toEqual([]);
    } finally {
      restoreSales('bob');
    }
  });

  it('when two users send their own credentials, then each is asked with them and only the revoked one loses the turn; one credential sent by two users is asked once for each', async () => {
    const aliceFirst = await chat('pair-alice', ALICE, { question: SALES_2024 });
    const bobFirst = await chat('pair-bob', BOB, { question: SALES_2024 });
    revokeSales('bob');
    try {
      t.clock.advance(TTL_MS + 1);
      const lookups = sdk.permissionLookups.length;
      const aliceNext = await chat('pair-alice', ALICE, {
        question: 'What about 2023?',
        session_id: aliceFirst.body.conversation_metadata.conversation_id,
      });
      const bobNext = await chat('pair-bob', BOB, {
        question: 'What about 2023?',
        session_id: bobFirst.body.conversation_metadata.conversation_id,
      });
      expect(aliceNext.body.memory_context_used).toMatchObject({ left_out_unreadable: 0, use_views: 'sales_db.sales' });
      expect(bobNext.body.memory_context_used).toMatchObject({ left_out_unreadable: 1, history_turns: [] });
      expect(sdk.permissionLookups.slice(lookups)).toEqual([{ user: 'alice' }, { user: 'bob' }]);

      // Two memorychat users with alice's Denodo credentials: each has an entry of its own, never the other's.
      const other = await chat('pair-alice-2', ALICE, { question: SALES_2024 });
      const before = sdk.permissionLookups.length;
      await chat('pair-alice-2', ALICE, { question: 'What about 2023?', session_id: other.body.conversation_metadata.conversation_id });
      await chat('pair-alice', ALICE, { question: 'And 2022?', session_id: aliceFirst.body.conversation_metadata.conversation_id });
      expect(sdk.permissionLookups.slice(before)).toEqual([{ user: 'alice' }]);
    } finally {
      restoreSales('bob');
    }
  });

  it('when the caller is a Data Marketplace administrator, then getUserPermissions says so and no view is probed', async () => {
    const ROOT = basicAuth('root', 'root-pw');
    const first = await chat('admin', ROOT, { question: SALES_2024 });
    const executions = sdk.executions.length;
    const next = await chat('admin', ROOT, { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id });
    expect(next.body.memory_context_used).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 0 });
    expect(sdk.permissionLookups.at(-1)).toEqual({ user: 'root' });
    expect(sdk.executions).toHaveLength(executions);
  });

  it('when getUserPermissions fails, then memory keeps today’s bounds, the reply says unavailable, and the next question asks again', async () => {
    const first = await chat('failing', ALICE, { question: SALES_2024 });
    const session_id = first.body.conversation_metadata.conversation_id;
    t.clock.advance(TTL_MS + 1);
    sdk.failPermissionsLookup(true);
    try {
      const next = await chat('failing', ALICE, { question: 'What about 2023?', session_id });
      expect(next.status).toBe(200);
      expect(next.body.memory_context_used).toMatchObject({
        view_permissions: 'unavailable',
        left_out_unreadable: 0,
        use_views: 'sales_db.sales',
      });
    } finally {
      sdk.failPermissionsLookup(false);
    }
    const recovered = await chat('failing', ALICE, { question: 'And 2022?', session_id });
    expect(recovered.body.memory_context_used).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 0 });
  });

  it('when /memory/context would carry a turn over a revoked view, then its history and memories leave it out and count it', async () => {
    const first = await chat('context', ALICE, { question: SALES_2024 });
    const session_id = first.body.conversation_metadata.conversation_id;
    const context = () =>
      t.request('POST', '/memory/context', {
        token: t.token('context'),
        body: { question: 'What about 2023?', session_id },
        headers: { 'x-upstream-authorization': ALICE },
      });
    const before = await context();
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 0, history_turns: [1] });
    expect(before.body.context_text).toContain('sales_db');

    revokeSales('alice');
    try {
      t.clock.advance(TTL_MS + 1);
      const after = await context();
      expect(after.status).toBe(200);
      expect(after.body).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 1, history_turns: [], memories: [] });
      expect(after.body.context_text).not.toContain('sales_db');
    } finally {
      restoreSales('alice');
    }
  });

  it('when /memory/search finds a turn over a revoked view, then the result leaves it out and counts it', async () => {
    await chat('search', ALICE, { question: SALES_2024 });
    const search = () =>
      t.request('POST', '/memory/search', {
        token: t.token('search'),
        body: { query: 'sales by region', k: 5 },
        headers: { 'x-upstream-authorization': ALICE },
      });
    const before = await search();
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 0 });
    expect(before.body.results.map((r: { sql_query: string }) => r.sql_query)).toEqual([
      'SELECT * FROM "sales_db"."sales" WHERE "year" = 2024',
    ]);

    revokeSales('alice');
    try {
      t.clock.advance(TTL_MS + 1);
      const after = await search();
      expect(after.status).toBe(200);
      expect(after.body).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 1, results: [] });
    } finally {
      restoreSales('alice');
    }
  });
});

describe('memory with an SDK release that has no getUserPermissions (0.13)', () => {
  let sdk: DenodoSdkStandIn;
  let t: TestApp;

  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: users(), release: '0.13' });
    t = await startTestApp({ ANSWER_URL: sdk.answerUrl, ANSWER_AUTH: undefined });
  });
  afterAll(async () => {
    await t?.close();
    await sdk?.close();
  });

  it("when the SDK answers getUserPermissions with FastAPI's 404, then memory keeps today's bounds and the reply says the permissions are unavailable", async () => {
    const chat = (body: Record<string, unknown>) =>
      t.request('POST', '/memoryChat', { token: t.token('old-sdk'), body, headers: { 'x-upstream-authorization': ALICE } });
    const first = await chat({ question: SALES_2024 });
    expect(first.status).toBe(200);
    const session_id = first.body.conversation_metadata.conversation_id;

    const next = await chat({ question: 'What about 2023?', session_id });
    expect(next.status).toBe(200);
    expect(next.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2023');
    expect(next.body.memory_context_used).toMatchObject({
      view_permissions: 'unavailable',
      left_out_unreadable: 0,
      history_turns: [1],
      use_views: 'sales_db.sales',
    });
    expect(sdk.permissionLookups).toEqual([]);
    expect(sdk.executions).toEqual([]);
    const asked = sdk.requests.filter((r) => r.path.startsWith('/getUserPermissions'));
    expect(asked).toHaveLength(1);

    // The SDK's lack is remembered for MEMORY_VIEW_PERMISSIONS_TTL: not asked again on every question.
    await chat({ question: 'And 2022?', session_id });
    expect(sdk.requests.filter((r) => r.path.startsWith('/getUserPermissions'))).toHaveLength(1);
  });
});
