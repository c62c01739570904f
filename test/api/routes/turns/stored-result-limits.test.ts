import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeHttpServer, sendJson, startFakeHttpServer } from '../../../support/fakes/fake-http-server.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

const rows = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`Row ${i + 1}`, [{ columnName: 'n', value: i + 1 }]]));

describe('stored result limits (MEMORY_STORE_RESULT_ROWS)', () => {
  let t: TestApp;
  let execute: FakeHttpServer;

  beforeAll(async () => {
    execute = await startFakeHttpServer((_req, res) => sendJson(res, 200, { execution_result: rows(5) }));
    t = await startTestApp({ MEMORY_STORE_RESULT_ROWS: '2', ANSWER_EXECUTE_URL: `${execute.url}/executeVQL` });
  });
  afterAll(async () => {
    await t?.close();
    await execute?.close();
  });

  it('when a turn has more result rows than are kept, then the CSV says it was cut and fresh re-runs the SQL', async () => {
    const token = t.token('rows-user');
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: { question: 'numbers', answer: 'five of them', sql_query: 'SELECT n FROM numbers', execution_result: rows(5) },
    });
    expect(stored.status).toBe(201);
    expect(stored.body.warnings).toEqual(['only 2 of 5 result rows were stored; result.csv?fresh=true re-runs the SQL']);
    const id = stored.body.session.session_id;

    const csv = await fetch(`${t.baseUrl}/sessions/${id}/turns/last/result.csv`, { headers: { authorization: `Bearer ${token}` } });
    expect(await csv.text()).toBe('n\n1\n2\n');
    expect(csv.headers.get('x-result-truncated')).toBe('true');
    expect(csv.headers.get('x-result-rows-stored')).toBe('2');
    expect(csv.headers.get('x-result-rows-total')).toBe('5');

    const fresh = await fetch(`${t.baseUrl}/sessions/${id}/turns/last/result.csv?fresh=true`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await fresh.text()).toBe('n\n1\n2\n3\n4\n5\n');
    expect(fresh.headers.get('x-result-truncated')).toBeNull();

    const whole = await t.request('POST', `/sessions/${id}/turns`, {
      token,
      body: { question: 'two numbers', answer: 'two', sql_query: 'SELECT n FROM numbers LIMIT 2', execution_result: rows(2) },
    });
    expect(whole.body.warnings).toEqual([]);
    const wholeCsv = await fetch(`${t.baseUrl}/sessions/${id}/turns/last/result.csv`, { headers: { authorization: `Bearer ${token}` } });
    expect(wholeCsv.headers.get('x-result-truncated')).toBeNull();
  });
});
