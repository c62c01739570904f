import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson } from '../../../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

const EMAIL = 'jane.doe@example.com';
const PHONE = '+44 20 7946 0958';

describe('PII masking (MEMORY_PII=mask)', () => {
  let t: TestApp;
  let upstream: FakeUpstream;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream((fake) => ({ ANSWER_EXECUTE_URL: `${fake.url}/executeVQL`, MEMORY_PII: 'mask' })));
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  it('when a turn carries an email and a phone, then context, search, SQL recall, the session and the export read them masked', async () => {
    const token = t.token('pii-owner');
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: {
        question: `Which orders did ${EMAIL} place?`,
        answer: `Three orders; the customer's phone is ${PHONE}.`,
        sql_query: `SELECT * FROM orders WHERE email = '${EMAIL}'`,
        context: { customer: EMAIL },
        metadata: { contact: PHONE },
        messages: [
          { role: 'user', content: `Which orders did ${EMAIL} place?` },
          { role: 'assistant', content: 'Three orders.' },
        ],
      },
    });
    expect(stored.status).toBe(201);
    const sessionId = stored.body.session.session_id;
    expect(stored.body.session.session_name).toBe('Which orders did [email] place?');

    const context = await t.request('POST', '/memory/context', {
      token,
      body: { question: 'and last year?', session_id: sessionId, format: 'openai' },
    });
    expect(context.status).toBe(200);
    expect(context.body.messages[0]).toMatchObject({ role: 'user', content: 'Which orders did [email] place?' });
    expect(context.body.slots).toEqual({ customer: '[email]' });
    expect(JSON.stringify(context.body)).not.toContain(EMAIL);
    expect(JSON.stringify(context.body)).not.toContain('7946');

    const search = await t.request('POST', '/memory/search', { token, body: { query: 'orders placed by a customer' } });
    expect(search.status).toBe(200);
    expect(search.body.results[0].question).toBe('Which orders did [email] place?');
    expect(JSON.stringify(search.body)).not.toContain(EMAIL);

    const sql = await t.request('GET', `/sessions/${sessionId}/turns/last/sql`, { token });
    expect(sql.body.sql_query).toBe("SELECT * FROM orders WHERE email = '[email]'");
    const before = upstream.requests.length;
    const fresh = await t.request('GET', `/sessions/${sessionId}/turns/last/result.csv?fresh=true`, {
      token,
      headers: { 'x-upstream-authorization': 'Basic dXNlcjpwdw==' },
    });
    expect([fresh.status, fresh.body.code]).toEqual([409, 'stored-sql-masked']);
    expect(upstream.requests.length).toBe(before);

    const exported = await t.request('POST', '/me/export', { token });
    const done = await gdprRequestFinished(t, exported.body.request_id, { token });
    expect(done.status).toBe('completed');
    const doc = (await t.request('GET', done.download_url, { token })).body;
    const text = JSON.stringify(doc);
    expect(text).toContain('[email]');
    expect(text).toContain('[phone]');
    expect(text).not.toContain(EMAIL);
    expect(text).not.toContain('7946');

    const rows = await t.admin.query(`SELECT question, answer, metadata, messages, context FROM turns WHERE user_id = 'pii-owner'`);
    expect(JSON.stringify(rows.rows)).not.toContain(EMAIL);
  });

  it('when /memoryChat is asked about an email, then the answerer gets it as asked and memory stores it masked', async () => {
    const token = t.token('pii-chat');
    upstream.handle((_req, res) => sendJson(res, 200, { ...salesReply('2024'), answer: `Sent to ${EMAIL}.` }));
    const reply = await t.request('POST', '/memoryChat', { token, body: { question: `Email the 2024 sales to ${EMAIL}` } });
    expect(reply.status).toBe(200);
    expect(upstream.lastBody().question).toBe(`Email the 2024 sales to ${EMAIL}`);
    expect(reply.body.answer).toBe(`Sent to ${EMAIL}.`);

    const row = await t.admin.query(`SELECT question, answer FROM turns WHERE user_id = 'pii-chat'`);
    expect(row.rows).toEqual([{ question: 'Email the 2024 sales to [email]', answer: 'Sent to [email].' }]);
  });

  it('when a session is created by its key, through the turns API or /memoryChat, then its name is masked too', async () => {
    const token = t.token('pii-keyed');
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: { session_key: 'slack:C1:1', question: `Which orders did ${EMAIL} place?`, answer: 'Three.' },
    });
    expect(stored.status).toBe(201);
    upstream.handle((_req, res) => sendJson(res, 200, salesReply('2024')));
    const chat = await t.request('POST', '/memoryChat', { token, body: { session_key: 'slack:C1:2', question: `Sales for ${EMAIL}?` } });
    expect(chat.status).toBe(200);
    const { rows } = await t.admin.query(`SELECT session_name FROM sessions WHERE user_id = 'pii-keyed' ORDER BY session_key`);
    expect(rows).toEqual([{ session_name: 'Which orders did [email] place?' }, { session_name: 'Sales for [email]?' }]);
  });
});
