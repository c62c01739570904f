import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_BODY_LIMITS, jsonShapeProblem } from '../../../../services/api/json-shape.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

describe('the shape bounds of a JSON body', () => {
  it('when strings hold brackets, commas, quotes and escapes, then they count as one value each', () => {
    const tricky = { 'a,"]}': ['[', ']', '{', '}', ',', '"', '\\', '\\"]'], n: -1.5e3, t: true, f: false, z: null };
    expect(jsonShapeProblem(JSON.stringify(tricky))).toBeUndefined();
    expect(jsonShapeProblem(JSON.stringify({ list: new Array(JSON_BODY_LIMITS.arrayItems).fill('x') }))).toBeUndefined();
  });

  it('when a bound is broken, then the problem names the field where it broke', () => {
    const rows = new Array(JSON_BODY_LIMITS.arrayItems + 1).fill(0);
    expect(jsonShapeProblem(JSON.stringify({ a: [{}, { 'we"ird': rows }] }))).toEqual({
      field: 'body.a[1].we"ird',
      message: `has more than ${JSON_BODY_LIMITS.arrayItems} items`,
    });
    const keys = Object.fromEntries(Array.from({ length: JSON_BODY_LIMITS.objectKeys + 1 }, (_, i) => [`k${i}`, i]));
    expect(jsonShapeProblem(JSON.stringify({ metadata: keys }))?.field).toBe('body.metadata');
    const deep = '['.repeat(JSON_BODY_LIMITS.depth + 1) + ']'.repeat(JSON_BODY_LIMITS.depth + 1);
    expect(jsonShapeProblem(deep)?.message).toMatch(/nested deeper than 64/);
    const many = Array.from({ length: 9_000 }, () => [1, 2, 3, 4, 5]);
    expect(jsonShapeProblem(JSON.stringify({ many }))).toEqual({
      field: 'body',
      message: `holds more than ${JSON_BODY_LIMITS.values} JSON values`,
    });
  });
});

describe('turn bodies past the shape bounds', () => {
  let t: TestApp;
  let token: string;
  beforeAll(async () => {
    t = await startTestApp();
    token = t.token('bulky');
  });
  afterAll(async () => t?.close());

  it('when a 4 MB turn holds a two-million-element array or 400,000 keys, then 400 names the field and nothing is stored', async () => {
    const array = await t.request('POST', '/sessions/turns', {
      token,
      body: JSON.stringify({ question: 'q', answer: 'a', execution_result: new Array(2_000_000).fill(0) }),
    });
    expect(array.status).toBe(400);
    expect(array.headers.get('content-type')).toContain('application/problem+json');
    expect(array.body.errors).toEqual([{ field: 'body.execution_result', message: 'has more than 10000 items' }]);

    const metadata = Object.fromEntries(Array.from({ length: 400_000 }, (_, i) => [`k${i}`, 0]));
    const keys = await t.request('POST', '/sessions/turns', { token, body: JSON.stringify({ question: 'q', answer: 'a', metadata }) });
    expect(keys.status).toBe(400);
    expect(keys.body.errors).toEqual([{ field: 'body.metadata', message: 'has more than 1000 keys' }]);

    expect((await t.request('GET', '/sessions', { token })).body.sessions).toEqual([]);
  });

  it('when a turn stores a result of 10,000 rows, then it is within the bounds and reads back whole', async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => ({ region: `r${i}`, total: i }));
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: { question: 'Totals by region', answer: '10,000 regions', sql_query: 'SELECT region, total FROM t', execution_result: rows },
    });
    expect(stored.status).toBe(201);
    const turn = await t.request('GET', `/sessions/${stored.body.session.session_id}/turns/1/sql`, { token });
    expect(turn.status).toBe(200);
    const csv = await t.request('GET', `/sessions/${stored.body.session.session_id}/turns/1/result.csv`, { token });
    expect(String(csv.body).trim().split('\n')).toHaveLength(10_001);
  });

  it('when a turn names a table of 3,000 characters and 10,000 tables, then it is stored and found', async () => {
    const stored = await t.request('POST', '/sessions/turns', {
      token,
      body: {
        question: 'Rows of the widest table',
        answer: 'Here they are.',
        sql_query: `SELECT * FROM "${'w'.repeat(3000)}"`,
        tables_used: Array.from({ length: 10_000 }, (_, i) => `${'t'.repeat(100)}${i}`),
      },
    });
    expect(stored.status).toBe(201);
    const found = await t.request('POST', '/memory/search', { token, body: { query: 'Rows of the widest table', k: 1 } });
    expect(found.body.results.map((r: { question: string }) => r.question)).toEqual(['Rows of the widest table']);
  });
});
