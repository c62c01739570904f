import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../scripts/soak/service-process.js';
import { sqlAnswererEnv, startSqlWarehouse } from '../../support/databases/sql-warehouse.js';
import { type FakeHttpServer, sendJson, startFakeHttpServer } from '../../support/fakes/fake-http-server.js';
import { startFakeOpenAI } from '../../support/fakes/fake-llm.js';
import { salesReply } from '../../support/fakes/fake-upstream.js';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '../../support/fakes/openid-provider.js';
import { hostileReplies, hostileSqlReplies, sendHostileReply } from '../../support/fuzz/answers.js';
import { brokenAuthorizations } from '../../support/fuzz/auth.js';
import { rawRequest } from '../../support/fuzz/raw-http.js';
import { type FuzzWorld, fuzzRequests, operationsOf } from '../../support/fuzz/requests.js';
import { FuzzTally } from '../../support/fuzz/tally.js';
import { startTestApp, type TestApp } from '../../support/service/test-app.js';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const CONCURRENCY = 8;
const BODY_LIMIT_BYTES = 131_072;
const TURN_BODY_LIMIT_BYTES = 262_144;

describe('fuzzed input against every route', () => {
  let upstream: FakeHttpServer;
  let idp: TestOpenIdProvider;
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
    // Account linking is on, with a real OpenID provider, so that its routes are fuzzed past their
    // "not configured" answer: starting a link, its status, unlinking and the browser's callback.
    port = await freePort();
    const redirectUrl = `http://127.0.0.1:${port}/account-link/callback`;
    idp = await startTestOpenIdProvider({ accounts: { 'fuzz@corp.example': { password: 'fuzz', username: 'fuzz' } }, redirectUrl });
    // Forwarded upstream credentials put X-Upstream-Authorization on the fuzzed path; small body limits
    // make over-limit bodies cheap to send; the rate limit is on but never reached.
    const env = {
      ANSWER_URL: `${upstream.url}/answerQuestion`,
      ANSWER_EXECUTE_URL: `${upstream.url}/executeVQL`,
      ANSWER_AUTH: 'forward',
      RATE_LIMIT_PER_MINUTE: '100000000',
      // Fuzzed credentials fail by the hundred from one address; the throttle has its own test.
      AUTH_FAILURES_PER_MINUTE: '0',
      BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES),
      MEMORY_TURN_BODY_LIMIT_BYTES: String(TURN_BODY_LIMIT_BYTES),
      ACCOUNT_LINK_ISSUER: idp.issuer,
      ACCOUNT_LINK_CLIENT_ID: idp.clientId,
      ACCOUNT_LINK_CLIENT_SECRET: idp.clientSecret,
      ACCOUNT_LINK_REDIRECT_URL: redirectUrl,
      ACCOUNT_LINK_KEYS: `fuzz:${randomBytes(32).toString('base64')}`,
    };
    // FUZZ_DEBUG=1 prints server errors, and where the fuzz reached per operation and problem code.
    t = await startTestApp(env, { port, logger: process.env.FUZZ_DEBUG ? { level: 'error' } : undefined });
  });
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
    await idp?.close();
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
    const file = JSON.parse(await readFile(new URL('../../../openapi/openapi.json', import.meta.url), 'utf8'));
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
        `(reproduce: FUZZ_SEED=${SEED} npx vitest run test/api/app/fuzz.test.ts)`,
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

/**
 * Hostile answers (huge, huge cells, NULs, invalid JSON, slow streams) from an upstream fake and from
 * the SQL answerer's fake LLM: no 500 or 503 (a broken answerer is a documented 502 or 504), every
 * stored turn within the stored bounds, and the process's
 * memory does not grow from one round of them to the next. Memory is `process.memoryUsage().rss` of the
 * test process, which runs the service in process, sampled every 50 ms.
 */
const HOSTILE_ANSWERS = Number(process.env.FUZZ_HOSTILE_ANSWERS ?? 60);
const MAX_REPLY_BYTES = 2 * 1_048_576;
const TEXT_BYTES = 65_536;
const RESULT_BYTES = 262_144;
const ANSWER_TIMEOUT_MS = 1500;

function sampleRss() {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  return () => {
    clearInterval(timer);
    return Math.round(Math.max(peak, process.memoryUsage().rss) / 1_048_576);
  };
}

/** The largest stored texts and result of the app's turns, in bytes. */
async function largestStored(t: TestApp) {
  const { rows } = await t.admin.query<{ answer: number; sql: number; explanation: number; result: number; tables: number }>(
    `SELECT coalesce(max(octet_length(answer)), 0) AS answer, coalesce(max(octet_length(sql_query)), 0) AS sql,
            coalesce(max(octet_length(query_explanation)), 0) AS explanation,
            coalesce(max(octet_length(execution_result::text)), 0) AS result,
            coalesce(max(octet_length(array_to_string(tables_used, ','))), 0) AS tables
       FROM turns`,
  );
  return rows[0]!;
}

describe('fuzzed hostile answers', () => {
  const limits = {
    ANSWER_MAX_REPLY_BYTES: String(MAX_REPLY_BYTES),
    MEMORY_STORE_TEXT_BYTES: String(TEXT_BYTES),
    MEMORY_STORE_RESULT_BYTES: String(RESULT_BYTES),
    ANSWER_TIMEOUT_MS: String(ANSWER_TIMEOUT_MS),
    RATE_LIMIT_PER_MINUTE: '0',
  };

  /** Asks each question (JSON or streamed, with an Idempotency-Key or not), 4 at a time; the statuses. */
  async function askAll(t: TestApp, count: number, question: (i: number) => string) {
    const token = t.token('hostile');
    const failures: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < count) {
          const i = next++;
          const stream = i % 3 === 2;
          const res = await fetch(`${t.baseUrl}/memoryChat`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${token}`,
              'content-type': 'application/json',
              ...(stream ? { accept: 'text/event-stream' } : {}),
              ...(i % 2 ? { 'idempotency-key': `hostile-${i}-${question(i).length}` } : {}),
            },
            body: JSON.stringify({ question: question(i) }),
          });
          const body = await res.text();
          const type = res.headers.get('content-type') ?? '';
          // A broken answerer is told as 502/504 (docs/errors.md); a 500 or 503 would be the service's own failure.
          if (res.status >= 500 && res.status !== 502 && res.status !== 504)
            failures.push(`${res.status} ${question(i).slice(0, 80)}: ${body.slice(0, 200)}`);
          else if (res.status >= 400 && !type.startsWith('application/problem+json')) failures.push(`${res.status} as ${type}`);
          else if (stream && res.status === 200 && !/event: (reply|error)\n/.test(body))
            failures.push(`a stream that did not end: ${body.slice(-200)}`);
        }
      }),
    );
    return failures;
  }

  it('when an upstream answerer replies with hostile answers, then no 500 or 503, every stored turn is bounded, and memory does not grow per round', async () => {
    const replies = fc.sample(hostileReplies({ maxReplyBytes: MAX_REPLY_BYTES, timeoutMs: ANSWER_TIMEOUT_MS }), {
      seed: SEED,
      numRuns: HOSTILE_ANSWERS,
    });
    const upstream = await startFakeHttpServer((req, res) => {
      const i = Number(/hostile #(\d+)/.exec(String(req.body?.question))?.[1] ?? -1);
      const reply = replies[i];
      if (!reply) return sendJson(res, 200, salesReply(String(req.body?.question ?? '')));
      return sendHostileReply(res, reply);
    });
    const t = await startTestApp({
      ...limits,
      ANSWER_URL: `${upstream.url}/answerQuestion`,
    });
    try {
      const rss: number[] = [];
      for (const round of [1, 2]) {
        const peak = sampleRss();
        const failures = await askAll(t, replies.length, (i) => `hostile #${i} round ${round}: ${replies[i]!.kind}`);
        rss.push(peak());
        expect(failures, `seed ${SEED}`).toEqual([]);
      }
      const largest = await largestStored(t);
      const healthy = await t.request('POST', '/memoryChat', { token: t.token('after'), body: { question: 'Sales for 2024?' } });
      const ready = await t.request('GET', '/readyz');
      console.log(
        `hostile upstream answers: seed=${SEED} ${replies.length}×2 (${[...new Set(replies.map((r) => r.kind))].join(', ')}); ` +
          `peak RSS round 1 ${rss[0]} MB, round 2 ${rss[1]} MB; largest stored: ${JSON.stringify(largest)}`,
      );
      expect(largest.answer).toBeLessThanOrEqual(TEXT_BYTES);
      expect(largest.sql).toBeLessThanOrEqual(TEXT_BYTES);
      expect(largest.tables).toBeLessThanOrEqual(TEXT_BYTES);
      // jsonb's text form may differ from the JSON that was measured by a few bytes per value.
      expect(largest.result).toBeLessThanOrEqual(RESULT_BYTES * 1.1);
      expect(rss[1]! - rss[0]!).toBeLessThan(150);
      expect([healthy.status, ready.status]).toEqual([200, 200]);
    } finally {
      await t.close();
      await upstream.close();
    }
  }, 300_000);

  it('when the SQL answerer’s LLM writes hostile SQL and output, then no 500 or 503 and every stored turn is bounded', async () => {
    const llmReplies = fc.sample(hostileSqlReplies(300_000), { seed: SEED, numRuns: Math.ceil(HOSTILE_ANSWERS / 2) });
    let calls = 0;
    const fake = await startFakeOpenAI(() => llmReplies[calls++ % llmReplies.length]!);
    const warehouse = await startSqlWarehouse();
    const t = await startTestApp({
      ...limits,
      ...sqlAnswererEnv(warehouse, { provider: 'openai', baseURL: fake.baseURL }),
      SQL_REPAIR_ATTEMPTS: '0',
      SQL_STATEMENT_TIMEOUT_MS: '5000',
    });
    try {
      const peak = sampleRss();
      const failures = await askAll(t, llmReplies.length, (i) => `hostile sql #${i}`);
      const rss = peak();
      const largest = await largestStored(t);
      console.log(`hostile SQL answers: seed=${SEED} ${llmReplies.length}; peak RSS ${rss} MB; largest stored: ${JSON.stringify(largest)}`);
      expect(failures, `seed ${SEED}`).toEqual([]);
      expect(largest.answer).toBeLessThanOrEqual(TEXT_BYTES);
      expect(largest.explanation).toBeLessThanOrEqual(TEXT_BYTES);
      expect(largest.tables).toBeLessThanOrEqual(TEXT_BYTES);
      expect(largest.result).toBeLessThanOrEqual(RESULT_BYTES * 1.1);
    } finally {
      await t.close();
      await warehouse.remove();
      await fake.close();
    }
  }, 300_000);
});
