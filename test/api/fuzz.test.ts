import { readFile } from 'node:fs/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeHttpServer, sendJson, startFakeHttpServer } from '../support/fake-http-server.js';
import { salesReply } from '../support/fake-upstream.js';
import { brokenAuthorizations } from '../support/fuzz-auth.js';
import { rawRequest } from '../support/fuzz-raw-http.js';
import { type FuzzWorld, fuzzRequests, operationsOf } from '../support/fuzz-requests.js';
import { FuzzTally } from '../support/fuzz-tally.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const CONCURRENCY = 8;
const BODY_LIMIT_BYTES = 131_072;
const TURN_BODY_LIMIT_BYTES = 262_144;

describe('fuzzed input against every route', () => {
  let upstream: FakeHttpServer;
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    upstream = await startFakeHttpServer((req, res) => {
      if (req.path === '/executeVQL')
        return sendJson(res, 200, { execution_result: { 'Row 1': [{ columnName: 'vql', value: String(req.body?.vql) }] } });
      // The answer quotes the question, so hostile text is stored as an answer too.
      const question = String(req.body?.question ?? '');
      sendJson(res, 200, { ...salesReply(question), answer: `You asked: ${question.slice(0, 300)}` });
    });
    // Forwarded upstream credentials put X-Upstream-Authorization on the fuzzed path; small body limits
    // make over-limit bodies cheap to send; the rate limit is on but never reached.
    const env = {
      ANSWER_URL: `${upstream.url}/answerQuestion`,
      ANSWER_EXECUTE_URL: `${upstream.url}/executeVQL`,
      ANSWER_AUTH: 'forward',
      RATE_LIMIT_PER_MINUTE: '100000000',
      BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES),
      MEMORY_TURN_BODY_LIMIT_BYTES: String(TURN_BODY_LIMIT_BYTES),
    };
    // FUZZ_DEBUG=1 prints server errors, and where the fuzz reached per operation and problem code.
    t = await startTestApp(env, { logger: process.env.FUZZ_DEBUG ? { level: 'error' } : undefined });
    port = Number(new URL(t.baseUrl).port);
  });
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
  });

  /** Users with sessions that hold SQL and results, users to erase, another user's sessions, GDPR requests. */
  async function buildWorld(): Promise<FuzzWorld> {
    const storeTurn = async (token: string, sessionId: string | undefined, n: number) => {
      const stored = await t.request('POST', sessionId ? `/sessions/${sessionId}/turns` : '/sessions/turns', {
        token,
        body: {
          question: `Total sales by region for 202${n}`,
          answer: `EMEA ${n}00`,
          sql_query: `SELECT region, SUM(amount) FROM sales WHERE year = 202${n} GROUP BY region`,
          execution_result: { 'Row 1': [{ columnName: 'region', value: 'EMEA' }] },
        },
      });
      expect(stored.status).toBe(201);
      return stored.body.session.session_id as string;
    };
    const sessions = async (token: string, count: number, turns: number) => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const id = await storeTurn(token, undefined, 0);
        for (let n = 1; n < turns; n++) await storeTurn(token, id, n);
        ids.push(id);
      }
      return ids;
    };
    const user = async (userId: string, claims: Record<string, unknown> = {}) => {
      const token = t.token(userId, claims);
      return {
        userId,
        authorization: `Bearer ${token}`,
        sessionIds: await sessions(token, 3, 3),
        doomedSessionIds: await sessions(token, 6, 1),
      };
    };
    const users = [await user('fuzz-u0'), await user('fuzz-u1', { tenant: 'acme' }), await user('fuzz-admin', { roles: ['memory-admin'] })];
    const admin = t.token('fuzz-admin', { roles: ['memory-admin'] });
    const exportRequest = await t.request('POST', '/admin/users/fuzz-u0/export', { token: admin });
    expect(exportRequest.status).toBe(202);
    return {
      users,
      expendableUsers: [await user('fuzz-erased-1'), await user('fuzz-erased-2')],
      brokenAuthorizations: brokenAuthorizations(t.token('fuzz-u0')),
      foreignSessionIds: await sessions(t.token('fuzz-outsider'), 2, 1),
      gdprRequestIds: [exportRequest.body.request_id],
      bodyLimitBytes: BODY_LIMIT_BYTES,
      turnBodyLimitBytes: TURN_BODY_LIMIT_BYTES,
    };
  }

  it('when ten thousand generated requests hit every route, then none answers 5xx, every 4xx is a problem, and the service still works', async () => {
    const spec = (await t.request('GET', '/openapi.json')).body;
    const file = JSON.parse(await readFile(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'));
    for (const [path, methods] of Object.entries<Record<string, unknown>>(file.paths)) {
      for (const method of Object.keys(methods))
        expect(spec.paths[path]?.[method], `${method} ${path} of openapi/openapi.json is served`).toBeDefined();
    }
    const operations = operationsOf(spec);
    const world = await buildWorld();
    const requests = fc.sample(fuzzRequests(operations, world), { seed: SEED, numRuns: REQUESTS });

    const tally = new FuzzTally();
    let next = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length) {
          const request = requests[next++]!;
          tally.record(request, await rawRequest(port, request));
        }
      }),
    );
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (process.env.FUZZ_DEBUG) console.log(tally.coverage());

    const healthy = await t.request('POST', '/memoryChat', {
      token: t.token('fuzz-after'),
      headers: { 'x-upstream-authorization': 'Bearer upstream-token' },
      body: { question: 'Show me total sales by region for 2024' },
    });
    const ready = await t.request('GET', '/readyz');

    const { byClass, breaches } = tally;
    console.log(
      `fuzz: seed=${SEED} requests=${requests.length} operations=${tally.perOperation.size} in ${seconds}s ` +
        `2xx=${byClass['2xx']} 4xx=${byClass['4xx']} 5xx=${byClass['5xx']} non-problem-4xx=${tally.nonProblem4xx} ` +
        `no-response=${breaches.filter((b) => b.reason.startsWith('the connection')).length} ` +
        `(reproduce: FUZZ_SEED=${SEED} npx vitest run test/api/fuzz.test.ts)`,
    );
    expect(breaches.slice(0, 5), `seed ${SEED}: ${breaches.length} responses broke the contract: ${tally.breachSummary()}`).toEqual([]);
    expect(requests.length).toBeGreaterThanOrEqual(REQUESTS);
    // Every operation was fuzzed, and the valid share got past validation to the handlers.
    for (const op of operations) {
      expect(tally.perOperation.get(`${op.method} ${op.path}`)?.sent ?? 0, `${op.method} ${op.path}`).toBeGreaterThan(
        REQUESTS / operations.length / 4,
      );
    }
    expect(byClass['2xx']).toBeGreaterThan(REQUESTS / 10);
    expect(healthy.status).toBe(200);
    expect(ready.status).toBe(200);
  }, 180_000);
});
