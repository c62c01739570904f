import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeHttpServer, sendJson, startFakeHttpServer } from '../../../support/fakes/fake-http-server.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

const OLD_FORM = {
  'Row 1': [
    { columnName: 'os', value: 'android' },
    { columnName: 'users', value: 1204 },
  ],
  'Row 2': [
    { columnName: 'os', value: 'ios, "beta"' },
    { columnName: 'users', value: 987 },
  ],
};
const NEW_FORM = {
  full: {
    'Row 1': [
      { columnName: 'region', value: 'EMEA' },
      { columnName: 'total', value: 100.5 },
    ],
  },
  full_csv: 'region,total\nEMEA,100.5\n',
  llm: { 'Row 1': [{ columnName: 'region', value: 'EMEA' }] },
  llm_csv: 'region\nEMEA\n',
};

describe('memory API: SQL recall', () => {
  let t: TestApp;
  let execute: FakeHttpServer;
  let token: string;
  let id: string;

  beforeAll(async () => {
    execute = await startFakeHttpServer((req, res) =>
      sendJson(res, 200, {
        vql: req.body?.vql,
        execution_result: String(req.body?.vql).includes('huge')
          ? [{ c: 'x'.repeat(2 * 1_048_576) }]
          : String(req.body?.vql).includes('hostile')
            ? [{ name: '=HYPERLINK("http://evil.example","x")', delta: -3 }]
            : { 'Row 1': [{ columnName: 'users', value: 1500 }] },
      }),
    );
    t = await startTestApp({ ANSWER_EXECUTE_URL: `${execute.url}/executeVQL`, ANSWER_AUTH: 'forward', ANSWER_MAX_REPLY_BYTES: '1048576' });
    token = t.token('slack-user');
    const turns = [
      {
        question: 'How many Android users signed up?',
        answer: '1204',
        sql_query: 'SELECT os, count(*) AS users FROM signups GROUP BY os',
        execution_result: OLD_FORM,
      },
      { question: 'Thanks! Can you explain?', answer: 'Sure, it counts signups.' },
      {
        question: 'Sales by region for 2024',
        answer: 'EMEA 100.5',
        sql_query: 'SELECT region, sum(total) FROM sales GROUP BY region',
        execution_result: NEW_FORM,
      },
      { question: 'And the Android share over time?', answer: 'Rising', sql_query: 'SELECT month, share FROM android_share' },
    ];
    const first = await t.request('POST', '/sessions/turns', { token, body: turns[0] });
    id = first.body.session.session_id;
    for (const turn of turns.slice(1)) expect((await t.request('POST', `/sessions/${id}/turns`, { token, body: turn })).status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
    await execute?.close();
  });

  it('when SQL is asked for the first, last, previous and a numbered question, then each names the right turn', async () => {
    const sqlOf = async (ref: string) => (await t.request('GET', `/sessions/${id}/turns/${ref}/sql`, { token })).body;
    expect(await sqlOf('first')).toMatchObject({ turn_number: 1, sql_query: 'SELECT os, count(*) AS users FROM signups GROUP BY os' });
    expect(await sqlOf('last')).toMatchObject({ turn_number: 4, question: 'And the Android share over time?' });
    expect(await sqlOf('previous')).toMatchObject({ turn_number: 3, question: 'Sales by region for 2024' });
    expect(await sqlOf('3')).toMatchObject({ turn_number: 3, tables_used: [] });
  });

  it('when the turn has no SQL, does not exist, or the ref is bad, then it answers a 4xx problem', async () => {
    const noSql = await t.request('GET', `/sessions/${id}/turns/2/sql`, { token });
    expect([noSql.status, noSql.body.code]).toEqual([404, 'turn-has-no-sql']);
    const missing = await t.request('GET', `/sessions/${id}/turns/99/sql`, { token });
    expect([missing.status, missing.body.code]).toEqual([404, 'turn-not-found']);
    const bad = await t.request('GET', `/sessions/${id}/turns/second/sql`, { token });
    expect([bad.status, bad.body.code]).toEqual([400, 'validation-failed']);
    const zero = await t.request('GET', `/sessions/${id}/turns/0/sql`, { token });
    expect(zero.status).toBe(400);
  });

  it('when SQL is looked up by keywords, then the latest matching question with SQL answers', async () => {
    const android = await t.request('GET', `/sessions/${id}/sql?q=android`, { token });
    expect(android.status).toBe(200);
    expect(android.body).toMatchObject({ turn_number: 4, keywords: ['android'] });
    const phrase = await t.request('GET', `/sessions/${id}/sql?q=${encodeURIComponent('show SQL for the android signed up question')}`, {
      token,
    });
    expect(phrase.body).toMatchObject({ turn_number: 1, keywords: ['android', 'signed', 'up'] });
    const none = await t.request('GET', `/sessions/${id}/sql?q=kubernetes`, { token });
    expect([none.status, none.body.code]).toEqual([404, 'turn-not-found']);
    const percent = await t.request('GET', `/sessions/${id}/sql?q=${encodeURIComponent('%')}`, { token });
    expect([percent.status, percent.body.code]).toEqual([400, 'validation-failed']);
    const literal = await t.request('GET', `/sessions/${id}/sql?q=${encodeURIComponent('sales_%')}`, { token });
    expect(literal.status).toBe(404);
  });

  it('when the result of the old {"Row 1": …} form is exported, then it is CSV with quoting', async () => {
    const res = await fetch(`${t.baseUrl}/sessions/${id}/turns/first/result.csv`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/csv');
    expect(res.headers.get('content-disposition')).toContain(`turn-1.csv`);
    expect(await res.text()).toBe('os,users\nandroid,1204\n"ios, ""beta""",987\n');
  });

  it('when the result of the new {full, full_csv, …} form is exported, then the full rows are CSV', async () => {
    const res = await fetch(`${t.baseUrl}/sessions/${id}/turns/3/result.csv`, { headers: { authorization: `Bearer ${token}` } });
    expect(await res.text()).toBe('region,total\nEMEA,100.5\n');
  });

  it('when a turn has SQL but no stored result, then CSV answers 404 result-not-stored', async () => {
    const res = await t.request('GET', `/sessions/${id}/turns/last/result.csv`, { token });
    expect([res.status, res.body.code]).toEqual([404, 'result-not-stored']);
  });

  it("when ?fresh=true, then the stored SQL is re-run upstream with the caller's credentials", async () => {
    const res = await fetch(`${t.baseUrl}/sessions/${id}/turns/last/result.csv?fresh=true&limit=50`, {
      headers: { authorization: `Bearer ${token}`, 'x-upstream-authorization': 'Basic dXNlcjpwdw==' },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('users\n1500\n');
    const sent = execute.requests.at(-1)!;
    expect(sent.path).toBe('/executeVQL');
    expect(sent.body).toEqual({ vql: 'SELECT month, share FROM android_share', limit: 50 });
    expect(sent.headers.authorization).toBe('Basic dXNlcjpwdw==');

    const without = await t.request('GET', `/sessions/${id}/turns/last/result.csv?fresh=true`, { token });
    expect([without.status, without.body.code]).toEqual([400, 'validation-failed']);
  });

  it('when stored and fresh results hold formulas, then both CSV exports neutralise them and keep negative numbers', async () => {
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: {
        question: 'Names please',
        answer: 'Here',
        sql_query: 'SELECT name FROM hostile',
        execution_result: { full_csv: "name,delta\n=cmd|' /C calc'!A0,-3\n@SUM(A1),4\n" },
      },
    });
    const session = stored.body.session.session_id;
    const csvOf = async (query: string) =>
      (
        await fetch(`${t.baseUrl}/sessions/${session}/turns/last/result.csv${query}`, {
          headers: { authorization: `Bearer ${token}`, 'x-upstream-authorization': 'Basic dXNlcjpwdw==' },
        })
      ).text();
    expect(await csvOf('')).toBe("name,delta\n'=cmd|' /C calc'!A0,-3\n'@SUM(A1),4\n");
    expect(await csvOf('?fresh=true')).toBe(`name,delta\n"'=HYPERLINK(""http://evil.example"",""x"")",-3\n`);
  });

  it('when a column name hides a formula behind a byte-order mark, then result.csv neither starts with the BOM and the formula nor shows it to a BOM-aware reader', async () => {
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: {
        question: 'Links please',
        answer: 'Here',
        sql_query: 'SELECT 1',
        execution_result: { 'Row 1': [{ columnName: '\uFEFF=HYPERLINK(B1)', value: '\u200B@SUM(A1)' }] },
      },
    });
    expect(stored.status).toBe(201);
    const res = await fetch(`${t.baseUrl}/sessions/${stored.body.session.session_id}/turns/last/result.csv`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.subarray(0, 4).toString('hex')).not.toBe('efbbbf3d');
    // As a BOM-aware reader decodes it: a leading BOM is taken as the encoding's and dropped.
    const cells = new TextDecoder('utf-8', { ignoreBOM: false }).decode(bytes).split('\n')[0]!;
    expect(cells.startsWith("'")).toBe(true);
    expect(new TextDecoder().decode(bytes)).toBe("'\uFEFF=HYPERLINK(B1)\n'\u200B@SUM(A1)\n");
  });

  it('when ?fresh=true re-runs SQL whose result is over ANSWER_MAX_REPLY_BYTES, then 502 upstream-bad-response, not a reply held whole', async () => {
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: { question: 'Everything', answer: 'Lots', sql_query: 'SELECT huge FROM everything' },
    });
    const res = await t.request('GET', `/sessions/${stored.body.session.session_id}/turns/last/result.csv?fresh=true`, {
      token,
      headers: { 'x-upstream-authorization': 'Basic dXNlcjpwdw==' },
    });
    expect([res.status, res.body.code]).toEqual([502, 'upstream-bad-response']);
    expect(res.body.detail).toContain('ANSWER_MAX_REPLY_BYTES');
  });
});
