import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

/**
 * Service credentials for bots (docs/api-keys.md): keys made by a tenant's admin, acting for the end
 * user named in X-Memory-User within the key's user namespace, apart from the users who sign in with a
 * JWT, every such call in the access audit.
 */
describe('API keys (/admin/api-keys, X-Api-Key, X-Memory-User)', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let admin: string;
  let otherAdmin: string;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({ JWT_DATABASES_CLAIM: 'dbs' }));
    admin = t.token('acme-admin', { tenant: 'acme', roles: ['memory-admin'] });
    otherAdmin = t.token('globex-admin', { tenant: 'globex', roles: ['memory-admin'] });
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  const createKey = async (body: Record<string, unknown>, token = admin) => {
    const res = await t.request('POST', '/admin/api-keys', { token, body });
    expect(res.status).toBe(201);
    return res.body as { key_id: string; api_key: string };
  };
  const asKey = (key: string, user?: string) => ({ 'x-api-key': key, ...(user === undefined ? {} : { 'x-memory-user': user }) });

  it('when an admin creates a key, then its secret is shown once and only its sha256 is stored', async () => {
    const created = await createKey({
      name: 'slack-bot',
      act_for_users: true,
      user_namespace: 'tg:',
      routes: ['memoryChat', 'getSession'],
    });
    expect(created).toMatchObject({
      name: 'slack-bot',
      act_for_users: true,
      user_namespace: 'tg:',
      routes: ['memoryChat', 'getSession'],
      revoked_at: null,
    });
    expect(created.api_key).toMatch(/^mck\.[A-Za-z0-9_-]+\.[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$/);

    const listed = await t.request('GET', '/admin/api-keys', { token: admin });
    expect(listed.status).toBe(200);
    const entry = listed.body.api_keys.find((k: any) => k.key_id === created.key_id);
    expect(entry).toMatchObject({ name: 'slack-bot' });
    expect(JSON.stringify(listed.body)).not.toContain(created.api_key.split('.')[3]);

    const secret = created.api_key.split('.')[3]!;
    const { rows } = await t.admin.query('SELECT secret_sha256 FROM api_keys WHERE key_id = $1', [created.key_id]);
    expect(rows[0].secret_sha256).toEqual(createHash('sha256').update(secret).digest());
    const { rows: anywhere } = await t.admin.query(`SELECT count(*)::int AS n FROM api_keys WHERE row_to_json(api_keys)::text LIKE $1`, [
      `%${secret}%`,
    ]);
    expect(anywhere[0].n).toBe(0);
  });

  it("when a key acts for a user, then that user's memory is kept across calls and apart from the JWT user of the same id", async () => {
    const { api_key } = await createKey({ name: 'telegram-bot', act_for_users: true, user_namespace: 'tg:' });
    const jwt = t.token('tg:4242', { tenant: 'acme' });

    const first = await t.request('POST', '/memoryChat', {
      headers: asKey(api_key, 'tg:4242'),
      body: { question: 'Show me total sales by region for 2024', session_key: 'chat-1' },
    });
    expect(first.status).toBe(200);
    const sessionId = first.body.conversation_metadata.conversation_id;

    const followUp = await t.request('POST', '/memoryChat', {
      headers: asKey(api_key, 'tg:4242'),
      body: { question: 'What about 2023?', session_key: 'chat-1' },
    });
    expect(followUp.body.conversation_metadata.conversation_id).toBe(sessionId);
    expect(followUp.body.memory_context_used.history_messages_count).toBe(1);
    const { rows } = await t.admin.query('SELECT user_id FROM sessions WHERE session_id = $1', [sessionId]);
    expect(rows).toEqual([{ user_id: 'key-user:tg:4242' }]);

    // A JWT user whose id is the same text is another user: neither reads the other.
    const viaJwt = await t.request('GET', `/sessions/${sessionId}`, { token: jwt });
    expect(viaJwt.status).toBe(404);
    const jwtSession = await t.request('POST', '/sessions/turns', { token: jwt, body: { question: 'JWT secret?', answer: 'mine.' } });
    const jwtRead = await t.request('GET', `/sessions/${jwtSession.body.session.session_id}`, { headers: asKey(api_key, 'tg:4242') });
    expect(jwtRead).toMatchObject({ status: 404, body: { code: 'session-not-found' } });

    // Another user of the same key sees none of it.
    const stranger = await t.request('GET', `/sessions/${sessionId}`, { headers: asKey(api_key, 'tg:9999') });
    expect(stranger.status).toBe(404);
    const strangerList = await t.request('GET', '/sessions', { headers: asKey(api_key, 'tg:9999') });
    expect(strangerList.body.sessions).toEqual([]);
  });

  it('when a key names a user outside its namespace, a JWT user, or another key, then it is refused with a 403 problem', async () => {
    const { api_key } = await createKey({ name: 'slack-bot-T1', act_for_users: true, user_namespace: 'slack:T1:' });
    const other = await createKey({ name: 'other-bot' });
    const jwtUser = t.token('alice', { tenant: 'acme' });
    const secret = await t.request('POST', '/sessions/turns', { token: jwtUser, body: { question: 'Payroll of Ada?', answer: 'L7' } });
    expect(secret.status).toBe(201);
    const keysOwn = await t.request('POST', '/sessions/turns', {
      headers: asKey(other.api_key),
      body: { question: 'Bot secret?', answer: 'K9' },
    });
    expect(keysOwn.status).toBe(201);

    for (const user of ['alice', `api-key:${other.key_id}`, 'slack:T12:U1', 'slack:T2:U1', 'key-user:slack:T1:U1', 'slack:T1']) {
      const res = await t.request('GET', '/sessions', { headers: asKey(api_key, user) });
      expect(res.status, user).toBe(403);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body).toMatchObject({ code: 'forbidden', detail: expect.stringContaining('"slack:T1:"') });
    }
    const inside = await t.request('GET', '/sessions', { headers: asKey(api_key, 'slack:T1:U1') });
    expect(inside).toMatchObject({ status: 200, body: { sessions: [] } });
    // A JWT cannot take the ids of key-acted users or of a key's principal either.
    for (const sub of ['key-user:slack:T1:U1', `api-key:${other.key_id}`]) {
      const res = await t.request('GET', '/sessions', { token: t.token(sub, { tenant: 'acme' }) });
      expect(res.status, sub).toBe(401);
    }
  });

  it('when a key is created, then act_for_users needs a namespace ending with ":" outside the reserved ids, and a namespace needs act_for_users', async () => {
    for (const body of [
      { name: 'x', act_for_users: true },
      { name: 'x', act_for_users: true, user_namespace: 'slack:T1' },
      { name: 'x', act_for_users: true, user_namespace: 'api-key:' },
      { name: 'x', act_for_users: true, user_namespace: 'key-user:' },
      { name: 'x', act_for_users: true, user_namespace: '  :' },
      { name: 'x', user_namespace: 'slack:T1:' },
    ]) {
      const res = await t.request('POST', '/admin/api-keys', { token: admin, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ code: 'validation-failed', errors: [{ field: '/user_namespace' }] });
    }
  });

  it('when a key made before namespaces existed acts for a user, then it is refused until replaced, and still acts as itself', async () => {
    const { api_key, key_id } = await createKey({ name: 'old-bot', act_for_users: true, user_namespace: 'old:' });
    // As migration 022 leaves a key created before it.
    await t.admin.query('UPDATE api_keys SET user_namespace = NULL WHERE key_id = $1', [key_id]);
    const acting = await t.request('GET', '/sessions', { headers: asKey(api_key, 'old:u1') });
    expect(acting).toMatchObject({ status: 403, body: { code: 'forbidden', detail: expect.stringContaining('no user namespace') } });
    const itself = await t.request('GET', '/sessions', { headers: asKey(api_key) });
    expect(itself.status).toBe(200);
  });

  it('when a key acts for a user, then every call is in the access audit with the key id, actor api-key:<id> and the user as subject', async () => {
    const { api_key, key_id } = await createKey({ name: 'audited-bot', act_for_users: true, user_namespace: 'tg:' });
    await t.request('GET', '/sessions', { headers: { ...asKey(api_key, 'tg:audited'), 'x-request-id': 'bot-call-1' } });
    await t.request('POST', '/sessions/turns', { headers: asKey(api_key, 'tg:audited'), body: { question: 'q?', answer: 'a.' } });
    // Acting as itself is not acting for a user: no entry.
    await t.request('GET', '/sessions', { headers: asKey(api_key) });

    const audit = await t.request('GET', '/admin/audit?action=act_for_user&user_id=key-user:tg:audited', { token: admin });
    expect(audit.status).toBe(200);
    expect(audit.body.entries.map((e: any) => [e.action, e.actor_user_id, e.subject_user_id, e.target, e.api_key_id]).sort()).toEqual([
      ['act_for_user', `api-key:${key_id}`, 'key-user:tg:audited', 'listSessions', key_id],
      ['act_for_user', `api-key:${key_id}`, 'key-user:tg:audited', 'storeTurnInNewSession', key_id],
    ]);
    expect(audit.body.entries.map((e: any) => e.http_request_id)).toContain('bot-call-1');
    const byKey = await t.request('GET', `/admin/audit?user_id=api-key:${key_id}`, { token: admin });
    expect(byKey.body.entries).toHaveLength(2);
  });

  it("when a key erases a user's data for them and polls the erasure, then no audit entry names the user afterwards", async () => {
    const { api_key } = await createKey({ name: 'erasing-bot', act_for_users: true, user_namespace: 'tg:' });
    const user = asKey(api_key, 'tg:leaving');
    await t.request('POST', '/sessions/turns', { headers: user, body: { question: 'q?', answer: 'a.' } });
    const erase = await t.request('DELETE', '/me', { headers: user });
    expect(erase.status).toBe(202);
    let status = '';
    for (let i = 0; i < 100 && status !== 'completed'; i++) {
      const polled = await t.request('GET', `/gdpr/requests/${erase.body.request_id}`, { headers: user });
      expect(polled.status).toBe(200);
      status = polled.body.status;
      if (status !== 'completed') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe('completed');
    // Polled once more after it completed, as a bot does.
    await t.request('GET', `/gdpr/requests/${erase.body.request_id}`, { headers: user });
    const { rows } = await t.admin.query(
      `SELECT count(*)::int AS n FROM access_audit WHERE subject_user_id LIKE '%tg:leaving' OR actor_user_id LIKE '%tg:leaving'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('when the key is revoked, then it is refused from then on and listed with revoked_at', async () => {
    const { api_key, key_id } = await createKey({ name: 'short-lived', act_for_users: true, user_namespace: 'tg:' });
    expect((await t.request('GET', '/sessions', { headers: asKey(api_key, 'tg:u1') })).status).toBe(200);

    const revoked = await t.request('DELETE', `/admin/api-keys/${key_id}`, { token: admin });
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));

    const refused = await t.request('GET', '/sessions', { headers: asKey(api_key, 'tg:u1') });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.body).toMatchObject({ code: 'unauthorized', detail: 'the API key has been revoked' });
  });

  it("when another tenant's admin lists or revokes a key, or a key is presented as another tenant's, then it is refused", async () => {
    const { api_key, key_id } = await createKey({ name: 'acme-only', act_for_users: true, user_namespace: 'tg:' });
    const theirs = await t.request('GET', '/admin/api-keys', { token: otherAdmin });
    expect(theirs.body.api_keys.map((k: any) => k.key_id)).not.toContain(key_id);
    expect((await t.request('DELETE', `/admin/api-keys/${key_id}`, { token: otherAdmin })).status).toBe(404);

    // The same id and secret with the tenant part swapped for globex's finds no key there.
    const [prefix, , id, secret] = api_key.split('.');
    const forged = [prefix, Buffer.from('globex').toString('base64url'), id, secret].join('.');
    const res = await t.request('GET', '/sessions', { headers: asKey(forged, 'u1') });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');

    // A globex user is reached through a globex key only: an acme key's X-Memory-User is an acme user.
    const globexKey = await createKey({ name: 'globex-bot', act_for_users: true, user_namespace: 'tg:' }, otherAdmin);
    const stored = await t.request('POST', '/sessions/turns', {
      headers: asKey(globexKey.api_key, 'tg:shared-name'),
      body: { question: 'globex secret?', answer: 'yes.' },
    });
    expect(stored.status).toBe(201);
    const viaAcme = await t.request('GET', '/sessions', { headers: asKey(api_key, 'tg:shared-name') });
    expect(viaAcme.body.sessions).toEqual([]);
  });

  it('when a key without the act_for_users permission names a user, then it is refused; without the header it acts as itself', async () => {
    const { api_key, key_id } = await createKey({ name: 'own-memory' });
    const refused = await t.request('GET', '/sessions', { headers: asKey(api_key, 'someone') });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'forbidden', detail: expect.stringContaining('act_for_users') });

    const stored = await t.request('POST', '/sessions/turns', { headers: asKey(api_key), body: { question: 'own?', answer: 'yes.' } });
    expect(stored.status).toBe(201);
    const { rows } = await t.admin.query('SELECT tenant_id, user_id FROM sessions WHERE session_id = $1', [stored.body.session.session_id]);
    expect(rows).toEqual([{ tenant_id: 'acme', user_id: `api-key:${key_id}` }]);
  });

  it('when X-Memory-User is not a valid user id, then it is refused as a JWT subject would be', async () => {
    const { api_key } = await createKey({ name: 'strict', act_for_users: true, user_namespace: 'tg:' });
    for (const user of ['', '   ']) {
      const res = await t.request('GET', '/sessions', { headers: asKey(api_key, user) });
      expect(res.status, JSON.stringify(user)).toBe(401);
      expect(res.body.detail).toMatch(/^X-Memory-User is not a valid user id/);
    }
    // Bytes that are not UTF-8 name no user.
    const broken = await rawGet(t.baseUrl, '/sessions', { 'x-api-key': api_key, 'x-memory-user': Buffer.from([0x75, 0xff, 0x31]) });
    expect(broken.status).toBe(401);
    // UTF-8 bytes are the user's id as the JWT's sub would carry it.
    const { rows: before } = await t.admin.query('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', ['key-user:tg:zoë']);
    const accented = await rawPost(
      t.baseUrl,
      '/sessions/turns',
      { 'x-api-key': api_key, 'x-memory-user': Buffer.from('tg:zoë', 'utf8') },
      {
        question: 'q?',
        answer: 'a.',
      },
    );
    expect(accented.status).toBe(201);
    const { rows: after } = await t.admin.query('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', ['key-user:tg:zoë']);
    expect(after[0].n).toBe(before[0].n + 1);
  });

  it('when a key is limited to routes and databases, then other routes are refused and memory is bounded to those databases', async () => {
    const { api_key } = await createKey({
      name: 'chat-only',
      act_for_users: true,
      user_namespace: 'tg:',
      routes: ['memoryChat', 'getMemoryContext'],
      databases: ['sales_db'],
    });
    // The user's memory belongs to the namespace, not to one key: an unbounded key of the same namespace wrote it.
    const unboundedKey = await createKey({ name: 'chat-unbounded', act_for_users: true, user_namespace: 'tg:' });
    const hr = await t.request('POST', '/sessions/turns', {
      headers: asKey(unboundedKey.api_key, 'tg:bounded-user'),
      body: { question: 'Salary band of Ada?', answer: 'L7', vdp_database_names: ['hr_db'], context: { salary_band: 'L7' } },
    });
    const sessionId = hr.body.session.session_id;

    const listing = await t.request('GET', '/sessions', { headers: asKey(api_key, 'tg:bounded-user') });
    expect(listing.status).toBe(403);
    expect(listing.body.detail).toBe('this API key may not call listSessions');

    const context = await t.request('POST', '/memory/context', {
      headers: asKey(api_key, 'tg:bounded-user'),
      body: { question: 'And Bob?', session_id: sessionId },
    });
    expect(context.status).toBe(200);
    expect(context.body.context_text).not.toContain('L7');
    const unbounded = await t.request('POST', '/memory/context', {
      headers: asKey(unboundedKey.api_key, 'tg:bounded-user'),
      body: { question: 'And Bob?', session_id: sessionId },
    });
    expect(unbounded.body.context_text).toContain('L7');
  });

  it('when routes name no operationId of the service, or the caller is no admin, or a key calls an admin route, then it is refused', async () => {
    const typo = await t.request('POST', '/admin/api-keys', { token: admin, body: { name: 'x', routes: ['memoryChat', 'memoryChats'] } });
    expect(typo.status).toBe(400);
    expect(typo.body).toMatchObject({ code: 'validation-failed', errors: [{ field: '/routes/1' }] });

    const user = await t.request('POST', '/admin/api-keys', { token: t.token('plain', { tenant: 'acme' }), body: { name: 'x' } });
    expect(user.status).toBe(403);

    const { api_key } = await createKey({ name: 'no-admin', act_for_users: true, user_namespace: 'tg:' });
    const asAdminUser = await t.request('GET', '/admin/api-keys', { headers: asKey(api_key, 'tg:acme-admin') });
    expect(asAdminUser.status).toBe(403);
    const both = await t.request('GET', '/sessions', { token: admin, headers: asKey(api_key, 'u1') });
    expect(both.status).toBe(401);
    const garbage = await t.request('GET', '/sessions', { headers: asKey('mck.not-a-key', 'u1') });
    expect(garbage).toMatchObject({ status: 401, body: { code: 'unauthorized', detail: 'the API key is not valid' } });
    // A tenant no text column can hold is refused before it reaches the database as a scope.
    const [prefix, , id, secret] = api_key.split('.');
    const nul = [prefix, Buffer.from('acme\u0000').toString('base64url'), id, secret].join('.');
    expect(await t.request('GET', '/sessions', { headers: asKey(nul, 'u1') })).toMatchObject({
      status: 401,
      body: { code: 'unauthorized' },
    });
  });
});

/** fetch cannot send header bytes beyond Latin-1 text; node:http sends a Buffer's bytes as they are. */
async function rawRequest(baseUrl: string, method: string, path: string, headers: Record<string, string | Buffer>, body?: unknown) {
  const http = await import('node:http');
  // A Buffer: with a string body, Node writes the headers in the body's encoding (UTF-8) instead of byte for byte.
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise<{ status: number }>((resolve, reject) => {
    const request = http.request(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(payload ? { 'content-type': 'application/json' } : {}),
        ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, typeof v === 'string' ? v : v.toString('latin1')])),
      },
    });
    request.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
    });
    request.on('error', reject);
    request.end(payload);
  });
}
const rawGet = (baseUrl: string, path: string, headers: Record<string, string | Buffer>) => rawRequest(baseUrl, 'GET', path, headers);
const rawPost = (baseUrl: string, path: string, headers: Record<string, string | Buffer>, body: unknown) =>
  rawRequest(baseUrl, 'POST', path, headers, body);
