import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { checkResourceAllowed } from '@modelcontextprotocol/sdk/shared/auth-utils.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, type DenodoSdkStandIn, type SdkView, startDenodoSdkStandIn } from '../../support/fakes/denodo-sdk-stand-in.js';
import { withAppWithoutDatabase } from '../../support/service/app-without-database.js';
import { startTestApp, TEST_JWT_SECRET, type TestApp } from '../../support/service/test-app.js';

/**
 * The MCP server at /mcp (docs/mcp.md), driven by the SDK's own Client over Streamable HTTP, in front
 * of the Denodo AI SDK stand-in (each Denodo user reads only their views; a follow-up is resolved only
 * from earlier SQL that memorychat sends it).
 */

const ISSUER = 'https://id.example.com';
const columns = (...names: string[]) => names.map((name) => ({ name }));
const VIEWS: SdkView[] = [
  { name: 'hr_db.employees', columns: columns('employee_id', 'name', 'department') },
  { name: 'sales_db.sales', description: 'Sales amounts per region', columns: columns('region', 'amount', 'year') },
];
const USERS = {
  alice: { password: 'alice-pw', views: ['hr_db.employees', 'sales_db.sales'] },
  bob: { password: 'bob-pw', views: ['hr_db.employees'] },
};
const ALICE_DENODO = basicAuth('alice', 'alice-pw');
const BOB_DENODO = basicAuth('bob', 'bob-pw');

type Structured = Record<string, any>;

describe('the MCP server at /mcp', () => {
  let sdk: DenodoSdkStandIn;
  let t: TestApp;
  const clients: Client[] = [];

  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS });
    // ANSWER_AUTH unset: each caller's Denodo credentials go upstream (forward), as a new deployment has it.
    t = await startTestApp({ ANSWER_URL: sdk.answerUrl, ANSWER_AUTH: undefined, JWT_ISSUER: ISSUER });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await t?.close();
    await sdk?.close();
  });

  const mcpUrl = () => new URL(`${t.baseUrl}/mcp`);
  const jwt = (sub: string, claims: Record<string, unknown> = {}) => t.token(sub, { iss: ISSUER, ...claims });

  async function connect(headers: Record<string, string>): Promise<Client> {
    const client = new Client({ name: 'memorychat-test-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { requestInit: { headers } }));
    clients.push(client);
    return client;
  }
  const asUser = (sub: string, denodo: string) => connect({ authorization: `Bearer ${jwt(sub)}`, 'x-upstream-authorization': denodo });
  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult & { structuredContent: Structured };

  let aliceSession: string;

  it('when an agent asks a question and then its follow-up through ask_data_question, then the follow-up is answered with the SQL memory resolved', async () => {
    const alice = await asUser('mcp-alice', ALICE_DENODO);
    const { tools } = await alice.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'ask_data_question',
      'forget_session',
      'get_session_context',
      'get_turn_sql',
      'recall_similar_questions',
    ]);

    const first = await call(alice, 'ask_data_question', { question: 'Total sales by region for 2024' });
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024');
    aliceSession = first.structuredContent.conversation_metadata.conversation_id;
    expect((first.content[0] as { text: string }).text).toContain(`session_id: ${aliceSession}`);

    const followUp = await call(alice, 'ask_data_question', { question: 'What about 2023?', session_id: aliceSession });
    expect(followUp.isError).toBeFalsy();
    const sql = followUp.structuredContent.sql_query;
    expect(sql).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2023');
    expect((followUp.content[0] as { text: string }).text).toContain(`<sql_query>\n${sql}\n</sql_query>`);
    expect(followUp.structuredContent.memory_context_used).toMatchObject({ applied: true, history_turns: [1] });
    expect(followUp.structuredContent.conversation_metadata).toMatchObject({ conversation_id: aliceSession, message_count: 2 });
    // Alice's own Denodo identity answered both: the stand-in saw her credentials.
    expect(sdk.calls.slice(-2).map((c) => c.user)).toEqual(['alice', 'alice']);
    console.log(`MCP follow-up through ask_data_question: "What about 2023?" → ${sql}`);

    const recalled = await call(alice, 'get_turn_sql', { session_id: aliceSession, ref: 'previous' });
    expect(recalled.structuredContent).toMatchObject({ turn_number: 1, sql_query: 'SELECT * FROM "sales_db"."sales" WHERE "year" = 2024' });
    const context = await call(alice, 'get_session_context', { question: 'And 2022?', session_id: aliceSession });
    expect(context.structuredContent.history_turns).toEqual([1, 2]);
    expect((context.content[0] as { text: string }).text).toContain('"year" = 2023');
  });

  it("when two users call the tools, then each sees and forgets only their own memory, and another's session is not found", async () => {
    const bob = await asUser('mcp-bob', BOB_DENODO);
    const own = await call(bob, 'ask_data_question', { question: 'How many employees per department?' });
    expect(own.structuredContent.sql_query).toBe('SELECT * FROM "hr_db"."employees"');
    const bobSession = own.structuredContent.conversation_metadata.conversation_id;

    const recalled = await call(bob, 'recall_similar_questions', { query: 'total sales by region', k: 10 });
    expect(recalled.structuredContent.results.map((r: Structured) => r.session_id)).toEqual([bobSession]);
    for (const [tool, args] of [
      ['get_turn_sql', { session_id: aliceSession, ref: 'last' }],
      ['get_session_context', { question: 'What about 2022?', session_id: aliceSession }],
      ['ask_data_question', { question: 'What about 2022?', session_id: aliceSession }],
      ['forget_session', { session_id: aliceSession }],
    ] as const) {
      const refused = await call(bob, tool, args);
      expect({ tool, isError: refused.isError, code: refused.structuredContent.code }).toEqual({
        tool,
        isError: true,
        code: 'session-not-found',
      });
    }

    const alice = await asUser('mcp-alice', ALICE_DENODO);
    const mine = await call(alice, 'recall_similar_questions', { query: 'total sales by region', k: 10 });
    expect(new Set(mine.structuredContent.results.map((r: Structured) => r.session_id))).toEqual(new Set([aliceSession]));
    expect((await call(alice, 'get_turn_sql', { session_id: aliceSession, ref: 'last' })).structuredContent.turn_number).toBe(2);

    const forgotten = await call(bob, 'forget_session', { session_id: bobSession });
    expect(forgotten.structuredContent).toEqual({ session_id: bobSession, deleted: true });
    expect((await call(bob, 'recall_similar_questions', { query: 'employees per department' })).structuredContent.results).toEqual([]);
    console.log(
      "MCP isolation: bob's recall found only his session; alice's session was session-not-found to bob in 4 tools and kept its 2 turns",
    );
  });

  it('when an API key limited to routes acts for a user, then it is that user of its namespace only, its tools outside the routes are refused, and its calls are audited', async () => {
    const admin = t.token('mcp-admin', { iss: ISSUER, roles: ['memory-admin'] });
    const created = await t.request('POST', '/admin/api-keys', {
      token: admin,
      body: { name: 'agent', act_for_users: true, user_namespace: 'agent:', routes: ['memoryChat', 'getTurnSql'] },
    });
    expect(created.status).toBe(201);
    const agent = await connect({
      'x-api-key': created.body.api_key,
      'x-memory-user': 'agent:alice',
      'x-upstream-authorization': ALICE_DENODO,
    });

    const asked = await call(agent, 'ask_data_question', { question: 'Total sales by region for 2021' });
    expect(asked.isError).toBeFalsy();
    const ownSession = asked.structuredContent.conversation_metadata.conversation_id;
    const own = await call(agent, 'get_turn_sql', { session_id: ownSession, ref: 'first' });
    expect(own.structuredContent).toMatchObject({ session_id: ownSession, turn_number: 1 });
    // The JWT user mcp-alice is not a user of the key's namespace: her session is not found.
    const jwtUsers = await call(agent, 'get_turn_sql', { session_id: aliceSession, ref: 'first' });
    expect(jwtUsers.isError).toBe(true);
    expect(jwtUsers.structuredContent).toMatchObject({ code: 'session-not-found', status: 404 });

    const refused = await call(agent, 'recall_similar_questions', { query: 'sales' });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ code: 'forbidden', status: 403, detail: 'this API key may not call searchMemory' });
    expect((refused.content[0] as { text: string }).text).toBe('Not allowed (forbidden): this API key may not call searchMemory');

    const audit = await t.request('GET', `/admin/audit?action=act_for_user&user_id=key-user:agent:alice`, { token: admin });
    expect(audit.body.entries.map((e: Structured) => [e.target, e.api_key_id]).sort()).toEqual([
      ['getTurnSql', created.body.key_id],
      ['getTurnSql', created.body.key_id],
      ['memoryChat', created.body.key_id],
    ]);
  });

  it('when a call cannot be served, then the tool error carries the problem (missing Denodo credentials, an argument out of bounds); a batch of calls or a GET is refused', async () => {
    const noDenodo = await connect({ authorization: `Bearer ${jwt('mcp-carol')}` });
    const unauthenticated = await call(noDenodo, 'ask_data_question', { question: 'Total sales by region for 2024' });
    expect(unauthenticated.isError).toBe(true);
    expect(unauthenticated.structuredContent).toMatchObject({ code: 'validation-failed', status: 400 });
    expect(unauthenticated.structuredContent.detail).toContain('X-Upstream-Authorization');

    const badRef = await call(noDenodo, 'get_turn_sql', { session_id: aliceSession, ref: 'zeroth' });
    expect(badRef.isError).toBe(true);
    expect((badRef.content[0] as { text: string }).text).toContain('ref');

    const calls = [1, 2].map((id) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'recall_similar_questions', arguments: { query: 'sales' } },
    }));
    const batch = await fetch(mcpUrl(), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${jwt('mcp-carol')}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(calls),
    });
    expect(batch.status).toBe(400);
    expect(await batch.json()).toMatchObject({
      code: 'validation-failed',
      detail: expect.stringContaining('one JSON-RPC request per POST'),
    });

    const get = await fetch(mcpUrl(), { headers: { accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(await get.json()).toMatchObject({ code: 'method-not-allowed' });
  });

  it('when JWT_ISSUER is a URL, then a 401 from /mcp points the SDK client to the protected-resource metadata, which names the issuer', async () => {
    await expect(connect({})).rejects.toThrow(/401|Unauthorized/i);
    const refused = await fetch(mcpUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(refused);
    expect(resourceMetadataUrl?.href).toBe(`${t.baseUrl}/.well-known/oauth-protected-resource/mcp`);

    // Found from the header, and by the well-known path a client tries without it.
    for (const options of [{ resourceMetadataUrl }, {}]) {
      const metadata = await discoverOAuthProtectedResourceMetadata(mcpUrl(), options);
      expect(metadata).toMatchObject({ resource: mcpUrl().href, authorization_servers: [ISSUER], bearer_methods_supported: ['header'] });
      expect(checkResourceAllowed({ requestedResource: mcpUrl(), configuredResource: metadata.resource })).toBe(true);
    }

    // Behind a proxy the resource is PUBLIC_URL's; with no issuer URL there is nothing to discover.
    const [behindProxy, noIssuer] = await Promise.all([
      withAppWithoutDatabase({ JWT_SECRET: TEST_JWT_SECRET, JWT_ISSUER: ISSUER, PUBLIC_URL: 'https://memorychat.example.com' }, (app) =>
        app.inject('/.well-known/oauth-protected-resource/mcp'),
      ),
      withAppWithoutDatabase({ JWT_SECRET: TEST_JWT_SECRET, JWT_ISSUER: 'memorychat-tokens' }, (app) =>
        app.inject('/.well-known/oauth-protected-resource/mcp'),
      ),
    ]);
    expect(behindProxy.json()).toMatchObject({ resource: 'https://memorychat.example.com/mcp', authorization_servers: [ISSUER] });
    expect(noIssuer.statusCode).toBe(404);
  });
});
