import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson } from '../../../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

describe('the upstream answerQuestion backend', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({ ANSWER_TIMEOUT_MS: '300' }));
    apps.push(t);
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await upstream?.close();
  });

  function answerWith(status: number, body: unknown) {
    upstream.handle((_req, res) => sendJson(res, status, body));
  }
  function answerNormally() {
    upstream.handle((req, res) => sendJson(res, 200, salesReply(req.body.question)));
  }
  async function ask(question: string, extra: Record<string, unknown> = {}, sub = 'quirks') {
    return t.request('POST', '/memoryChat', { token: t.token(sub), body: { question, ...extra } });
  }

  it('when tables_used is an empty string, then the reply has an empty list', async () => {
    answerWith(200, { ...salesReply('2024'), tables_used: '' });
    const reply = await ask('sales 2024');
    expect(reply.status).toBe(200);
    expect(reply.body.tables_used).toEqual([]);
  });

  it('when tables_used is a comma-separated string, then the reply has a list', async () => {
    answerWith(200, { ...salesReply('2024'), tables_used: 'bank.loans, bank.clients' });
    expect((await ask('loans')).body.tables_used).toEqual(['bank.loans', 'bank.clients']);
  });

  it('when execution_result has the old or the new form, then it is passed through unchanged', async () => {
    const oldForm = { 'Row 1': [{ columnName: 'region', value: 'EMEA' }] };
    answerWith(200, { ...salesReply('2024'), execution_result: oldForm });
    expect((await ask('old form')).body.execution_result).toEqual(oldForm);
    const newForm = { full: [{ region: 'EMEA' }], full_csv: 'region\nEMEA\n', llm: [{ region: 'EMEA' }], llm_csv: 'region\nEMEA\n' };
    answerWith(200, { ...salesReply('2024'), execution_result: newForm });
    expect((await ask('new form')).body.execution_result).toEqual(newForm);
  });

  it('when the upstream answers 404 "no relevant views", then the user gets that answer and it never steers SQL', async () => {
    answerWith(404, { detail: 'No relevant views were found for your question.' });
    const reply = await ask('What is the meaning of life?', {}, 'noviews');
    expect(reply.status).toBe(200);
    expect(reply.body.answer).toMatch(/No relevant views/);
    expect(reply.body.sql_query).toBe('');
    answerNormally();
    await t.request('POST', '/memoryChat', {
      token: t.token('noviews'),
      body: { question: 'and for 2023?', session_id: reply.body.conversation_metadata.conversation_id },
    });
    const sent = upstream.lastBody();
    expect(sent.custom_instructions).toContain('What is the meaning of life?');
    expect(sent.custom_instructions).not.toMatch(/SQL:/);
  });

  it('when the upstream answers FastAPI’s own 404, then a 502 names the URL called and the path it must have', async () => {
    answerWith(404, { detail: 'Not Found' });
    const reply = await ask('sales 2024');
    expect(reply.status).toBe(502);
    expect(reply.body.code).toBe('upstream-rejected');
    // The fake's ANSWER_URL ends in /answerQuestion: the hint is about the server behind it.
    expect(reply.body.detail).toBe(
      `POST ${upstream.answerUrl} answered 404 Not Found: the server has no answerQuestion there; check the Denodo AI SDK version and any path prefix of its proxy in ANSWER_URL`,
    );
  });

  it('when the upstream fails with 5xx, then 502 and no successful turn is stored', async () => {
    answerWith(200, salesReply('2024'));
    const first = await ask('Show me total sales by region for 2024', {}, 'fivexx');
    const sessionId = first.body.conversation_metadata.conversation_id;
    answerWith(503, { detail: 'overloaded' });
    const failed = await t.request('POST', '/memoryChat', {
      token: t.token('fivexx'),
      body: { question: 'Now for 2019', session_id: sessionId },
    });
    expect(failed.status).toBe(502);
    expect(failed.headers.get('content-type')).toContain('application/problem+json');
    expect(failed.body).toMatchObject({ code: 'upstream-failed', conversation_id: sessionId });

    answerNormally();
    const next = await t.request('POST', '/memoryChat', {
      token: t.token('fivexx'),
      body: { question: 'What about 2023?', session_id: sessionId },
    });
    expect(next.status).toBe(200);
    // The failed turn is on record but is neither history nor SQL context.
    expect(next.body.memory_context_used.history_messages_count).toBe(1);
    expect(upstream.lastBody().custom_instructions).not.toContain('Now for 2019');
    const { rows } = await t.admin.query(
      `SELECT turn_number, status FROM turns WHERE user_id = 'fivexx' AND session_id = $1 ORDER BY turn_number`,
      [sessionId],
    );
    expect(rows).toEqual([
      { turn_number: 1, status: 'ok' },
      { turn_number: 2, status: 'upstream_error' },
      { turn_number: 3, status: 'ok' },
    ]);
  });

  it('when the upstream does not answer in time, then 504', async () => {
    upstream.handle((req, res) => {
      setTimeout(() => sendJson(res, 200, salesReply(req.body.question)), 1500);
    });
    const reply = await ask('slow question');
    expect(reply.status).toBe(504);
    expect(reply.body.code).toBe('upstream-timeout');
    answerNormally();
  });

  it('when the upstream replies with something that is not JSON, then 502 upstream-bad-response', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy error</html>');
    });
    const reply = await ask('sales 2024');
    expect(reply.status).toBe(502);
    expect(reply.body.code).toBe('upstream-bad-response');
    answerNormally();
  });

  it('when the upstream connection is reset, then 502 upstream-failed', async () => {
    upstream.handle((_req, res) => {
      res.socket?.destroy();
    });
    const reply = await ask('sales 2024');
    expect(reply.status).toBe(502);
    expect(reply.body.code).toBe('upstream-failed');
    answerNormally();
  });

  it('when the upstream refuses the credentials, then 502 upstream-rejected', async () => {
    answerWith(401, { detail: 'Unauthorized' });
    const reply = await ask('sales 2024');
    expect(reply.status).toBe(502);
    expect(reply.body).toMatchObject({ code: 'upstream-rejected' });
    expect(reply.body.detail).toMatch(/401/);
    answerNormally();
  });

  describe('auth modes', () => {
    async function authHeaderSent(env: Record<string, string>, headers: Record<string, string> = {}) {
      const app = await startTestApp({ ANSWER_URL: upstream.answerUrl, ...env });
      apps.push(app);
      const reply = await app.request('POST', '/memoryChat', { token: app.token('auth'), body: { question: 'sales 2024' }, headers });
      return { status: reply.status, body: reply.body, authorization: upstream.requests.at(-1)?.headers.authorization };
    }

    it('when ANSWER_AUTH=forward, then X-Upstream-Authorization is sent as Authorization', async () => {
      const sent = await authHeaderSent({ ANSWER_AUTH: 'forward' }, { 'x-upstream-authorization': 'Basic dXNlcjpwYXNz' });
      expect(sent.status).toBe(200);
      expect(sent.authorization).toBe('Basic dXNlcjpwYXNz');
    });

    it('when ANSWER_AUTH=forward and the header is missing, then 400 and no upstream call', async () => {
      const before = upstream.requests.length;
      const app = apps.at(-1)!;
      const reply = await app.request('POST', '/memoryChat', { token: app.token('auth'), body: { question: 'sales 2024' } });
      expect(reply.status).toBe(400);
      expect(reply.body.detail).toMatch(/X-Upstream-Authorization/);
      expect(upstream.requests.length).toBe(before);
    });

    it('when ANSWER_AUTH=basic, then the configured user and password are sent', async () => {
      const sent = await authHeaderSent({ ANSWER_AUTH: 'basic', ANSWER_BASIC_USER: 'admin', ANSWER_BASIC_PASSWORD: 's3cret' });
      expect(sent.authorization).toBe(`Basic ${Buffer.from('admin:s3cret').toString('base64')}`);
    });

    it('when ANSWER_AUTH=bearer, then the configured token is sent', async () => {
      const sent = await authHeaderSent({ ANSWER_AUTH: 'bearer', ANSWER_BEARER_TOKEN: 'tok-123' });
      expect(sent.authorization).toBe('Bearer tok-123');
    });

    it('when ANSWER_AUTH=none, then no Authorization header is sent, whatever the caller sends', async () => {
      const sent = await authHeaderSent({ ANSWER_AUTH: 'none' }, { 'x-upstream-authorization': 'Basic abc' });
      expect(sent.status).toBe(200);
      expect(sent.authorization).toBeUndefined();
    });
  });

  it('when no answerer is configured, then 503 answerer-not-configured names the variables', async () => {
    const app = await startTestApp({});
    apps.push(app);
    const reply = await app.request('POST', '/memoryChat', { token: app.token('x'), body: { question: 'sales 2024' } });
    expect(reply.status).toBe(503);
    expect(reply.body.code).toBe('answerer-not-configured');
    // What ANSWER_URL alone means: the callers' own credentials, not a setting still to be made.
    expect(reply.body.detail).toMatch(/with ANSWER_URL alone every caller sends its own Denodo credentials in X-Upstream-Authorization/);
    expect(reply.body.detail).toMatch(/ANSWER_BACKEND=sql with SQL_DATABASE_URL and LLM_PROVIDER/);
  });
});
