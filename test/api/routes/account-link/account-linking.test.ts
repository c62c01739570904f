import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../../scripts/soak/service-process.js';
import { parseSealingKeys } from '../../../../services/config/account-link-keys.js';
import { runRetentionCleanup } from '../../../../services/core/jobs/retention-cleanup.js';
import { tokensContext } from '../../../../services/core/linking/linking-deps.js';
import { UnsealError, unseal } from '../../../../services/core/linking/token-sealing.js';
import { type DenodoSdkStandIn, type SdkView, startDenodoSdkStandIn } from '../../../support/fakes/denodo-sdk-stand-in.js';
import { jwksBearerVerifier } from '../../../support/fakes/jwks-bearer-verifier.js';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '../../../support/fakes/openid-provider.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

/**
 * Account linking end to end (docs/account-linking.md): a bot's users sign in with a real OpenID
 * provider (oidc-provider, in process), and the Denodo AI SDK stand-in, which accepts only that
 * provider's JWT access tokens (checked against its JWKS), answers each user with their own views.
 */

const columns = (...names: string[]) => names.map((name) => ({ name }));
const VIEWS: SdkView[] = [
  { name: 'sales_db.sales', description: 'Sales amounts per region', columns: columns('region', 'amount', 'year') },
  { name: 'hr_db.employees', description: 'Employees per department', columns: columns('employee_id', 'name', 'department') },
];
// VDP users, as the provider's `preferred_username` names them: Ana reads sales, Ben reads HR.
const VDP_USERS = { ana: { views: ['sales_db.sales'] }, ben: { views: ['hr_db.employees'] } };
const ACCOUNTS = {
  'ana@corp.example': { password: 'ana-password', username: 'ana' },
  'ben@corp.example': { password: 'ben-password', username: 'ben' },
};
const ANA = 'slack:T0001:U00000ANA';
const BEN = 'slack:T0001:U00000BEN';
const ACCESS_TOKEN_TTL_S = 300;

describe('account linking: each bot user asks the Denodo AI SDK with their own identity', () => {
  let idp: TestOpenIdProvider;
  let sdk: DenodoSdkStandIn;
  let t: TestApp;
  let key: string;
  const keys = `k2026:${randomBytes(32).toString('base64')}`;
  // VDP users an administrator disabled: Denodo refuses their tokens although the provider signed them.
  const disabledInVdp = new Set<string>();

  beforeAll(async () => {
    const port = await freePort();
    const redirectUrl = `http://127.0.0.1:${port}/account-link/callback`;
    idp = await startTestOpenIdProvider({ accounts: ACCOUNTS, redirectUrl, accessTokenTtlS: ACCESS_TOKEN_TTL_S });
    const verify = jwksBearerVerifier({ issuer: idp.issuer, audience: idp.resource });
    sdk = await startDenodoSdkStandIn({
      views: VIEWS,
      users: VDP_USERS,
      verifyBearer: async (token) => {
        const user = await verify(token);
        return user && !disabledInVdp.has(user) ? user : undefined;
      },
    });
    t = await startTestApp(
      {
        ANSWER_URL: sdk.answerUrl,
        // As a deployment in front of the SDK has it: each caller's credentials, here their linked token.
        ANSWER_AUTH: undefined,
        ACCOUNT_LINK_ISSUER: idp.issuer,
        ACCOUNT_LINK_CLIENT_ID: idp.clientId,
        ACCOUNT_LINK_CLIENT_SECRET: idp.clientSecret,
        ACCOUNT_LINK_REDIRECT_URL: redirectUrl,
        ACCOUNT_LINK_SCOPES: 'openid profile offline_access denodo',
        ACCOUNT_LINK_RESOURCE: idp.resource,
        ACCOUNT_LINK_KEYS: keys,
      },
      { port },
    );
    const admin = t.token('acme-admin', { tenant: 'acme', roles: ['memory-admin'] });
    const created = await t.request('POST', '/admin/api-keys', {
      token: admin,
      body: {
        name: 'slack-bot',
        act_for_users: true,
        user_namespace: 'slack:T0001:',
        routes: ['memoryChat', 'getTurnResultCsv', 'startAccountLink', 'getAccountLink', 'unlinkAccount', 'eraseMyData', 'getGdprRequest'],
      },
    });
    expect(created.status).toBe(201);
    key = created.body.api_key;
  });
  afterAll(async () => {
    await t?.close();
    await sdk?.close();
    await idp?.close();
  });

  const asUser = (user: string) => ({ 'x-api-key': key, 'x-memory-user': user });
  const ask = (user: string, question: string, sessionKey = `thread-${user}`) =>
    t.request('POST', '/memoryChat', { headers: asUser(user), body: { question, session_key: sessionKey } });
  const bearerOfLastCall = () => String(sdk.requests.at(-1)!.headers.authorization);
  const linkRow = async (user: string) =>
    (await t.admin.query('SELECT * FROM linked_identities WHERE tenant_id = $1 AND user_id = $2', ['acme', `key-user:${user}`])).rows[0];

  /** The bot asks for a link; the user opens it, signs in and is sent back to memorychat (as their browser). */
  async function link(user: string, account: keyof typeof ACCOUNTS) {
    const started = await t.request('POST', '/me/account-link', { headers: asUser(user) });
    expect(started.status).toBe(201);
    const callback = await idp.signIn(started.body.authorization_url, account, ACCOUNTS[account].password);
    expect(callback.origin + callback.pathname).toBe(`${t.baseUrl}/account-link/callback`);
    const page = await fetch(callback, { headers: { accept: 'text/html' } });
    return { callback, status: page.status, page: await page.text() };
  }

  it('when two Slack users link their own accounts, then each is answered with their own views only, and their tokens are stored sealed', async () => {
    const before = await ask(ANA, 'Total sales by region for 2024');
    expect(before.status).toBe(403);
    expect(before.body.code).toBe('account-not-linked');
    expect(sdk.calls).toHaveLength(0);

    const ana = await link(ANA, 'ana@corp.example');
    expect(ana.status).toBe(200);
    expect(ana.page).toContain(`Your account ana is now linked to ${ANA}.`);
    expect((await link(BEN, 'ben@corp.example')).status).toBe(200);

    const sales = await ask(ANA, 'Total sales by region for 2024');
    expect(sales.status).toBe(200);
    expect(sales.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024');
    expect(sdk.calls.at(-1)).toMatchObject({ user: 'ana', views: ['sales_db.sales'] });
    const anaBearer = bearerOfLastCall();
    expect(anaBearer).toMatch(/^Bearer eyJ/);
    // A follow-up in the thread: memory and the linked identity together.
    const followUp = await ask(ANA, 'What about 2023?');
    expect(followUp.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2023');

    const hr = await ask(BEN, 'Employees per department');
    expect(hr.status).toBe(200);
    expect(hr.body.sql_query).toBe('SELECT * FROM "hr_db"."employees"');
    expect(sdk.calls.at(-1)).toMatchObject({ user: 'ben', views: ['hr_db.employees'] });
    // Ben asks Ana's question: the SDK searches only the views VDP gives his token, and finds no sales.
    const notHis = await ask(BEN, 'Total sales by region for 2024');
    expect(notHis.status).toBe(200);
    expect(notHis.body.sql_query).not.toContain('sales_db');
    expect(sdk.calls.at(-1)).toMatchObject({ user: 'ben', views: ['hr_db.employees'] });
    expect(sdk.calls.every((call) => (call.user === 'ana') === call.views.includes('sales_db.sales'))).toBe(true);

    // At rest: no column holds a token; with the keys the row opens, with another key it does not.
    const row = await linkRow(ANA);
    expect(row).toMatchObject({ issuer: idp.issuer, subject: 'ana@corp.example', username: 'ana', key_id: 'k2026' });
    const accessToken = anaBearer.slice('Bearer '.length);
    const stored = JSON.stringify(row) + row.sealed_tokens.toString('latin1') + row.sealed_tokens.toString('base64');
    expect(stored).not.toContain(accessToken);
    expect(stored).not.toContain(accessToken.split('.')[2]);
    const opened = unseal<{ access_token: string; refresh_token: string }>(
      parseSealingKeys(keys),
      row.sealed_tokens,
      tokensContext({ tenantId: 'acme', userId: `key-user:${ANA}` }),
    );
    expect(opened.access_token).toBe(accessToken);
    expect(await idp.refreshTokenIsActive(opened.refresh_token)).toBe(true);
    const otherKey = parseSealingKeys(`k2026:${randomBytes(32).toString('base64')}`);
    expect(() => unseal(otherKey, row.sealed_tokens, tokensContext({ tenantId: 'acme', userId: `key-user:${ANA}` }))).toThrow(UnsealError);
    // Nor does Ana's sealed value open as Ben's.
    expect(() => unseal(parseSealingKeys(keys), row.sealed_tokens, tokensContext({ tenantId: 'acme', userId: `key-user:${BEN}` }))).toThrow(
      UnsealError,
    );
  });

  it('when an agent acts for a linked user through the MCP server, then the SDK gets that user’s own token and answers with their views', async () => {
    const agentFor = async (user: string) => {
      const client = new Client({ name: 'linked-agent', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: asUser(user) } }));
      return client;
    };
    const askThrough = async (client: Client, question: string) =>
      (await client.callTool({ name: 'ask_data_question', arguments: { question } })) as CallToolResult & {
        structuredContent: Record<string, any>;
      };
    const [ana, ben] = [await agentFor(ANA), await agentFor(BEN)];
    try {
      const sales = await askThrough(ana, 'Total sales by region for 2019');
      expect(sales.isError).toBeFalsy();
      expect(sales.structuredContent.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2019');
      expect(sdk.calls.at(-1)).toMatchObject({ user: 'ana', views: ['sales_db.sales'] });
      expect(bearerOfLastCall()).toMatch(/^Bearer eyJ/);

      const notHis = await askThrough(ben, 'Total sales by region for 2019');
      expect(notHis.structuredContent.sql_query ?? '').not.toContain('sales_db');
      expect(sdk.calls.at(-1)).toMatchObject({ user: 'ben', views: ['hr_db.employees'] });
    } finally {
      await Promise.all([ana.close(), ben.close()]);
    }
  });

  it('when a bot fetches a fresh CSV for each linked user, then the SDK runs each VQL with that user’s own token', async () => {
    const freshCsv = async (user: string, question: string) => {
      const asked = await ask(user, question, `thread-csv-${user}`);
      expect(asked.status).toBe(200);
      const token = bearerOfLastCall();
      const session = asked.body.conversation_metadata.conversation_id;
      const csv = await fetch(`${t.baseUrl}/sessions/${session}/turns/last/result.csv?fresh=true`, { headers: asUser(user) });
      const executed = sdk.requests.at(-1)!;
      return { token, session, status: csv.status, body: await csv.text(), path: executed.path, sentWith: executed.headers.authorization };
    };
    const ana = await freshCsv(ANA, 'Total sales by region for 2018');
    expect(ana).toMatchObject({ status: 200, body: 'region,amount,year\n100,200,300\n', path: '/executeVQL', sentWith: ana.token });
    const ben = await freshCsv(BEN, 'Employees per department');
    expect(ben).toMatchObject({
      status: 200,
      body: 'employee_id,name,department\n100,200,300\n',
      path: '/executeVQL',
      sentWith: ben.token,
    });
    expect(ben.token).not.toBe(ana.token);
    // Ben's bot naming Ana's session: not his.
    const notHis = await t.request('GET', `/sessions/${ana.session}/turns/last/result.csv?fresh=true`, { headers: asUser(BEN) });
    expect(notHis.status).toBe(404);
  });

  it('when a view is revoked for a linked bot user between two questions, then memory asks which views they may read with their linked token and leaves the turns over it out', async () => {
    const thread = 'thread-revoked-view';
    expect((await ask(ANA, 'Total sales by region for 2017', thread)).status).toBe(200);
    const carried = await ask(ANA, 'What about 2016?', thread);
    expect(carried.body.sql_query).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2016');
    expect(carried.body.memory_context_used).toMatchObject({ view_permissions: 'checked', left_out_unreadable: 0 });

    sdk.grant('ana', ['hr_db.employees']);
    try {
      // Past MEMORY_VIEW_PERMISSIONS_TTL, the answer given for Ana's token is asked again.
      t.clock.advance(60_001);
      const next = await ask(ANA, 'What about 2015?', thread);
      expect(next.status).toBe(200);
      const used = next.body.memory_context_used;
      expect(used).toMatchObject({ view_permissions: 'checked', history_turns: [] });
      // The thread's two turns, and Ana's turns over sales in her other threads that search found.
      expect(used.left_out_unreadable).toBeGreaterThanOrEqual(2);
      expect(used).not.toHaveProperty('use_views');
      // Asked as Ana (the stand-in knows her only from her linked token): her profile, then the view.
      expect(sdk.permissionLookups.at(-1)).toEqual({ user: 'ana' });
      expect(sdk.executions.at(-1)).toEqual({ user: 'ana', vql: 'SELECT * FROM "sales_db"."sales" WHERE 1 = 0' });
      expect(String(sdk.calls.at(-1)!.body.custom_instructions ?? '')).not.toContain('2016');
    } finally {
      sdk.grant('ana', ['sales_db.sales']);
    }
  });

  it('when the browser comes back a second time, or with a state this service did not make, then nothing is linked', async () => {
    const { callback } = await link('slack:T0001:U000CAROL', 'ana@corp.example');
    const again = await fetch(callback, { headers: { accept: 'text/html' } });
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('expired, was replaced by a newer one or was used already');

    const forged = new URL(callback);
    forged.searchParams.set('state', Buffer.from('{"t":"acme","u":"key-user:slack:T0001:U00000ANA","l":"x"}').toString('base64url'));
    const refused = await fetch(forged);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ code: 'account-link-invalid' });
  });

  it('when the access token is about to expire, then one refresh (the refresh token rotated) serves the questions asked meanwhile', async () => {
    await ask(ANA, 'Total sales by region for 2022');
    const old = bearerOfLastCall();
    const before = await linkRow(ANA);
    t.clock.advance((ACCESS_TOKEN_TTL_S - 30) * 1000);
    // Two questions at once: a second refresh with the rotated token would make the provider revoke the grant.
    const asked = await Promise.all([
      ask(ANA, 'Total sales by region for 2021', 'thread-2021'),
      ask(ANA, 'Total sales by region for 2020', 'thread-2020'),
    ]);
    expect(asked.map((a) => a.status)).toEqual([200, 200]);
    expect(sdk.calls.slice(-2).map((call) => call.user)).toEqual(['ana', 'ana']);
    const sent = sdk.requests.slice(-2).map((r) => r.headers.authorization);
    expect(sent[0]).toBe(sent[1]);
    expect(sent[0]).not.toBe(old);
    const after = await linkRow(ANA);
    expect(Number(after.token_version)).toBe(Number(before.token_version) + 1);
    const ctx = tokensContext({ tenantId: 'acme', userId: `key-user:${ANA}` });
    const [was, now] = [before, after].map(
      (r) => unseal<{ refresh_token: string }>(parseSealingKeys(keys), r.sealed_tokens, ctx).refresh_token,
    );
    expect(now).not.toBe(was);
    expect(await idp.refreshTokenIsActive(was!)).toBe(false);
  });

  it('when the provider revokes a user’s grant, then the next refresh is refused with account-link-expired and the tokens are deleted', async () => {
    await idp.revokeGrantsOf('ben@corp.example');
    t.clock.advance(ACCESS_TOKEN_TTL_S * 1000);
    const refused = await ask(BEN, 'Employees per department');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'account-link-expired' });
    expect(refused.body.detail).toMatch(/sign in again/);
    expect((await t.request('GET', '/me/account-link', { headers: asUser(BEN) })).body).toMatchObject({
      status: 'expired',
      username: 'ben',
    });
    expect(await linkRow(BEN)).toMatchObject({ sealed_tokens: null, key_id: null });

    // Signing in again links anew.
    expect((await link(BEN, 'ben@corp.example')).status).toBe(200);
    expect((await ask(BEN, 'Employees per department')).status).toBe(200);
  });

  it('when Denodo refuses a linked token (the VDP user disabled), then the question gets account-link-expired and the token is deleted', async () => {
    disabledInVdp.add('ben');
    try {
      const refused = await ask(BEN, 'Employees per department');
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('account-link-expired');
      expect(await linkRow(BEN)).toMatchObject({ sealed_tokens: null });
    } finally {
      disabledInVdp.delete('ben');
    }
  });

  it('when a user unlinks, then the tokens are deleted and revoked at the provider, and the next question is refused', async () => {
    const row = await linkRow(ANA);
    const { refresh_token } = unseal<{ refresh_token: string }>(
      parseSealingKeys(keys),
      row.sealed_tokens,
      tokensContext({ tenantId: 'acme', userId: `key-user:${ANA}` }),
    );
    const unlinked = await t.request('DELETE', '/me/account-link', { headers: asUser(ANA) });
    expect(unlinked).toMatchObject({ status: 200, body: { unlinked: true, revoked_at_provider: true } });
    expect(await linkRow(ANA)).toBeUndefined();
    expect(await idp.refreshTokenIsActive(refresh_token)).toBe(false);
    const refused = await ask(ANA, 'Total sales by region for 2024');
    expect(refused).toMatchObject({ status: 403, body: { code: 'account-not-linked' } });
  });

  it('when a linked user is erased, then their link goes with their data', async () => {
    expect((await link(ANA, 'ana@corp.example')).status).toBe(200);
    const erase = await t.request('DELETE', '/me', { headers: asUser(ANA) });
    expect(erase.status).toBe(202);
    const done = await gdprRequestFinished(t, erase.body.request_id, { headers: asUser(ANA) });
    expect(done.status).toBe('completed');
    expect(done.counts.linked_identities).toBe(1);
    expect(await linkRow(ANA)).toBeUndefined();
  });

  it('when an API key acts as itself, then it has no account to link', async () => {
    const refused = await t.request('POST', '/me/account-link', { headers: { 'x-api-key': key } });
    expect(refused).toMatchObject({ status: 403, body: { code: 'forbidden' } });
  });

  it('when sign-ins are abandoned and links can give no token, then retention deletes them and keeps the live ones', async () => {
    const now = t.clock.now;
    const past = new Date(now.getTime() - 60_000);
    const future = new Date(now.getTime() + 600_000);
    const seed = (user: string, columns: Record<string, unknown>) =>
      t.admin.query(
        `INSERT INTO linked_identities (tenant_id, user_id, created_at, ${Object.keys(columns).join(', ')})
         VALUES ('retention', $1, $2, ${Object.keys(columns)
           .map((_, i) => `$${i + 3}`)
           .join(', ')})`,
        [user, past, ...Object.values(columns)],
      );
    const pending = (until: Date) => ({ pending_link_id: randomUUID(), pending_sealed: Buffer.from('x'), pending_expires_at: until });
    const tokens = (access: Date, refresh: Date | null) => ({
      key_id: 'k2026',
      sealed_tokens: Buffer.from('x'),
      access_expires_at: access,
      refresh_expires_at: refresh,
    });
    await seed('abandoned', pending(past));
    await seed('signing-in', pending(future));
    await seed('refused', { expired_at: past });
    await seed('refresh-expired', tokens(past, past));
    await seed('refreshable', tokens(past, future));
    await seed('refresh-unknown', tokens(past, null));
    const result = await runRetentionCleanup({
      db: t.app.db,
      clock: () => now,
      log: { info: () => {}, warn: () => {}, error: () => {} },
      batchSize: 100,
      accessAuditRetentionMs: 400 * 86_400_000,
    });
    // Ben's refused link of an earlier test goes too.
    expect(result.linkedIdentities).toBeGreaterThanOrEqual(3);
    const { rows } = await t.admin.query(`SELECT user_id FROM linked_identities WHERE tenant_id = 'retention' ORDER BY user_id`);
    expect(rows.map((r) => r.user_id)).toEqual(['refresh-unknown', 'refreshable', 'signing-in']);
  });
});
