import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFingerprint } from '../../../../services/core/idempotency/idempotency.js';
import { runRetentionCleanup } from '../../../../services/core/jobs/retention-cleanup.js';
import { sendJson } from '../../../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';
import { silentLog } from '../../../support/service/test-worker.js';

const HOUR = 3_600_000;

describe('Idempotency-Key on /memoryChat and turn writes', () => {
  let upstream: FakeUpstream;
  let t: TestApp;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({
      ANSWER_TIMEOUT_MS: '5000',
      LLM_TIMEOUT_MS: '1000',
      IDEMPOTENCY_CLAIM_LEASE: '1s',
    }));
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  /** Answers like the default fake upstream, but only once `open()` is called. */
  function holdUpstream() {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    upstream.handle(async (req, res) => {
      await gate;
      sendJson(res, 200, salesReply(String(req.body?.question ?? '')));
    });
    return open;
  }

  function answerNormally() {
    upstream.handle((req, res) => sendJson(res, 200, salesReply(String(req.body?.question ?? ''))));
  }

  async function until(condition: () => boolean, what: string) {
    const deadline = Date.now() + 10_000;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async function storedTurns(userId: string) {
    const { rows } = await t.admin.query<{ session_id: string; turn_number: number; question: string }>(
      'SELECT session_id, turn_number, question FROM turns WHERE user_id = $1 ORDER BY session_id, turn_number',
      [userId],
    );
    return rows;
  }

  function chat(token: string, body: Record<string, unknown>, key?: string) {
    return t.request('POST', '/memoryChat', { token, body, headers: key === undefined ? {} : { 'idempotency-key': key } });
  }

  function storeTurn(token: string, sessionId: string | undefined, body: Record<string, unknown>, key?: string) {
    const url = sessionId ? `/sessions/${sessionId}/turns` : '/sessions/turns';
    return t.request('POST', url, { token, body, headers: key === undefined ? {} : { 'idempotency-key': key } });
  }

  it('when a turn write is sent three times with one key, then one turn is stored and every reply is the first', async () => {
    const token = t.token('idem-turn-seq');
    const body = { question: 'What is the total revenue?', answer: 'It is 42.', sql_query: 'SELECT sum(x) FROM t' };
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push(await storeTurn(token, undefined, body, 'turn-key-1'));

    expect(replies.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(replies[1]!.body).toEqual(replies[0]!.body);
    expect(replies[2]!.body).toEqual(replies[0]!.body);
    expect(replies.map((r) => r.headers.get('idempotent-replayed'))).toEqual([null, 'true', 'true']);
    const turns = await storedTurns('idem-turn-seq');
    expect(turns).toEqual([{ session_id: replies[0]!.body.session.session_id, turn_number: 1, question: body.question }]);
  });

  it('when one key is sent concurrently to a session, then one turn is stored and the others answer the same or 409', async () => {
    const token = t.token('idem-turn-conc');
    const first = await storeTurn(token, undefined, { question: 'First question?', answer: 'First.' });
    const sessionId = first.body.session.session_id;
    const body = { question: 'Second question?', answer: 'Second.' };

    const replies = await Promise.all([1, 2, 3, 4, 5].map(() => storeTurn(token, sessionId, body, 'turn-key-conc')));
    const created = replies.filter((r) => r.status === 201);
    const busy = replies.filter((r) => r.status === 409);
    expect(created.length + busy.length).toBe(5);
    for (const r of created) expect(r.body).toEqual(created[0]!.body);
    for (const r of busy) {
      expect(r.body.code).toBe('idempotency-in-progress');
      expect(r.headers.get('retry-after')).toBe('1');
    }
    const retry = await storeTurn(token, sessionId, body, 'turn-key-conc');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.turn.turn_number).toBe(2);
    expect(retry.body.session.message_count).toBe(2);
    expect((await storedTurns('idem-turn-conc')).map((r) => r.turn_number)).toEqual([1, 2]);
  });

  it('when /memoryChat is retried three times with one key, then the answerer is called once and one turn is stored', async () => {
    answerNormally();
    const token = t.token('idem-chat-seq');
    const calls = upstream.requests.length;
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push(await chat(token, { question: 'Show me total sales by region for 2024' }, 'chat-key-1'));

    expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(replies[1]!.body).toEqual(replies[0]!.body);
    expect(replies[2]!.body).toEqual(replies[0]!.body);
    expect(replies.map((r) => r.headers.get('idempotent-replayed'))).toEqual([null, 'true', 'true']);
    expect(upstream.requests.length - calls).toBe(1);
    expect(replies[0]!.body.conversation_metadata.message_count).toBe(1);
    expect(await storedTurns('idem-chat-seq')).toHaveLength(1);
  });

  it('when a retry arrives while the first /memoryChat still waits for the answerer, then it answers 409 with Retry-After', async () => {
    const open = holdUpstream();
    try {
      const token = t.token('idem-chat-conc');
      const calls = upstream.requests.length;
      const firstReply = chat(token, { question: 'Show me total sales by region for 2023' }, 'chat-key-conc');
      await until(() => upstream.requests.length > calls, 'the first request to reach the answerer');

      const [busy1, busy2] = await Promise.all([
        chat(token, { question: 'Show me total sales by region for 2023' }, 'chat-key-conc'),
        chat(token, { question: 'Show me total sales by region for 2023' }, 'chat-key-conc'),
      ]);
      for (const busy of [busy1, busy2]) {
        expect(busy.status).toBe(409);
        expect(busy.headers.get('content-type')).toContain('application/problem+json');
        expect(busy.headers.get('retry-after')).toBe('1');
        expect(busy.body).toMatchObject({ status: 409, code: 'idempotency-in-progress', type: '/problems/idempotency-in-progress' });
      }
      open();
      const first = await firstReply;
      expect(first.status).toBe(200);

      const retry = await chat(token, { question: 'Show me total sales by region for 2023' }, 'chat-key-conc');
      expect(retry.status).toBe(200);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body).toEqual(first.body);
      expect(upstream.requests.length - calls).toBe(1);
      expect(await storedTurns('idem-chat-conc')).toHaveLength(1);
    } finally {
      open();
      answerNormally();
    }
  });

  it('when a key is reused with another body, route or session, then it answers 422 and runs nothing', async () => {
    answerNormally();
    const token = t.token('idem-reuse');
    const first = await chat(token, { question: 'Show me total sales by region for 2024' }, 'reused-key');
    expect(first.status).toBe(200);
    const sessionId = first.body.conversation_metadata.conversation_id;
    const calls = upstream.requests.length;

    const otherBody = await chat(token, { question: 'Show me total sales by region for 2022' }, 'reused-key');
    expect(otherBody.status).toBe(422);
    expect(otherBody.headers.get('content-type')).toContain('application/problem+json');
    expect(otherBody.body).toMatchObject({ status: 422, code: 'idempotency-key-reused' });
    const otherRoute = await storeTurn(token, sessionId, { question: 'Show me total sales by region for 2024', answer: 'x' }, 'reused-key');
    expect(otherRoute.status).toBe(422);
    expect(otherRoute.body.code).toBe('idempotency-key-reused');

    const turnKey = await storeTurn(token, sessionId, { question: 'Q?', answer: 'A.' }, 'turn-reused');
    expect(turnKey.status).toBe(201);
    const secondSession = await chat(token, { question: 'Show me total sales by region for 2024' }, 'second-session-key');
    expect(secondSession.status).toBe(200);
    const otherSession = await storeTurn(
      token,
      secondSession.body.conversation_metadata.conversation_id,
      { question: 'Q?', answer: 'A.' },
      'turn-reused',
    );
    expect(otherSession.status).toBe(422);
    const newSession = await storeTurn(token, undefined, { question: 'Q?', answer: 'A.' }, 'turn-reused');
    expect(newSession.status).toBe(422);

    expect(upstream.requests.length - calls).toBe(1);
    expect(await storedTurns('idem-reuse')).toHaveLength(3);
  });

  it('when the same body is sent with its fields in another order, then it is the same request and is replayed', async () => {
    const token = t.token('idem-order');
    const first = await storeTurn(token, undefined, { question: 'Q1?', answer: 'A1.', metadata: { a: 1, b: 2 } }, 'order-key');
    const again = await storeTurn(token, undefined, { metadata: { b: 2, a: 1 }, answer: 'A1.', question: 'Q1?' }, 'order-key');
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('when two users send the same key, then each gets a result of their own', async () => {
    const body = { question: 'Shared question?', answer: 'Shared answer.' };
    const alice = await storeTurn(t.token('idem-alice'), undefined, body, 'same-key');
    const bob = await storeTurn(t.token('idem-bob'), undefined, body, 'same-key');
    expect([alice.status, bob.status]).toEqual([201, 201]);
    expect(bob.headers.get('idempotent-replayed')).toBeNull();
    expect(bob.body.session.session_id).not.toBe(alice.body.session.session_id);
    expect(await storedTurns('idem-bob')).toHaveLength(1);
  });

  it('when the Idempotency-Key is empty, too long or not printable ASCII, then it answers 400 and stores nothing', async () => {
    const token = t.token('idem-bad-key');
    for (const key of ['', 'k'.repeat(256), 'tab\there', 'caf\u00e9']) {
      const reply = await storeTurn(token, undefined, { question: 'Q?', answer: 'A.' }, key);
      expect(reply.status, JSON.stringify(key)).toBe(400);
      expect(reply.body.code).toBe('validation-failed');
    }
    const longest = await storeTurn(token, undefined, { question: 'Q?', answer: 'A.' }, `${'k'.repeat(254)}~`);
    expect(longest.status).toBe(201);
    expect(await storedTurns('idem-bad-key')).toHaveLength(1);
  });

  it('when the first run fails, then the key is released and a retry with it runs again', async () => {
    upstream.handle((_req, res) => sendJson(res, 500, { error: 'boom' }));
    try {
      const token = t.token('idem-failure');
      const failed = await chat(token, { question: 'Show me total sales by region for 2021' }, 'fail-key');
      expect(failed.status).toBe(502);
      answerNormally();
      const calls = upstream.requests.length;
      const retried = await chat(token, { question: 'Show me total sales by region for 2021' }, 'fail-key');
      expect(retried.status).toBe(200);
      expect(retried.headers.get('idempotent-replayed')).toBeNull();
      expect(upstream.requests.length - calls).toBe(1);
      const replay = await chat(token, { question: 'Show me total sales by region for 2021' }, 'fail-key');
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(retried.body);
    } finally {
      answerNormally();
    }
  });

  it('when the process holding a claim died before storing its turn, then a retry answers 409 until the claim lease ends, then runs once', async () => {
    const token = t.token('idem-lease');
    const body = { question: 'Lease question?', answer: 'Lease answer.' };
    // What a process killed while it waited for the answerer leaves behind: a claim nobody renews.
    // (A process killed after storing its turn leaves nothing to retry: the turn and the completed key
    // commit together.)
    await t.admin.query(
      `INSERT INTO idempotency_keys (tenant_id, user_id, idempotency_key, route, fingerprint, status, claim_id, locked_until, created_at, expires_at)
       SELECT 'default', 'idem-lease', 'lease-key', 'POST /sessions/turns', fingerprint, 'in_progress', gen_random_uuid(),
              $1::timestamptz + interval '1 second', $1, $1::timestamptz + interval '1 day'
       FROM (SELECT $2::text AS fingerprint) f`,
      [t.clock.now, requestFingerprint('POST /sessions/turns', {}, body)],
    );
    const during = await storeTurn(token, undefined, body, 'lease-key');
    expect(during.status).toBe(409);

    const other = await storeTurn(token, undefined, { ...body, answer: 'Another answer.' }, 'lease-key');
    t.clock.advance(2_000);
    const otherAfter = await storeTurn(token, undefined, { ...body, answer: 'Another answer.' }, 'lease-key');
    expect(other.status).toBe(422);
    expect(otherAfter.status).toBe(422); // a stale claim is taken over only by the same request

    const after = await storeTurn(token, undefined, body, 'lease-key');
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(await storedTurns('idem-lease')).toHaveLength(1);
    const replay = await storeTurn(token, undefined, body, 'lease-key');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(after.body);
  });

  it('when a request runs longer than the claim lease, then its process keeps renewing the claim and a retry still answers 409', async () => {
    const open = holdUpstream();
    try {
      const token = t.token('idem-renewed');
      const calls = upstream.requests.length;
      const firstReply = chat(token, { question: 'Total sales by region for 2022' }, 'renewed-key');
      await until(() => upstream.requests.length > calls, 'the first request to reach the answerer');
      // Five lease lengths pass on the service's clock; renewals (every third of the lease) move the claim along.
      t.clock.advance(5_000);
      await new Promise((r) => setTimeout(r, 1_000));
      const retry = await chat(token, { question: 'Total sales by region for 2022' }, 'renewed-key');
      expect(retry.status).toBe(409);
      open();
      expect((await firstReply).status).toBe(200);
      expect(upstream.requests.length - calls).toBe(1);
      expect(await storedTurns('idem-renewed')).toHaveLength(1);
    } finally {
      open();
      answerNormally();
    }
  });

  it('when a retry took over the claim while the first run waited, then the first run stores nothing and answers 409; the key ends with one turn', async () => {
    const open = holdUpstream();
    try {
      const token = t.token('idem-taken');
      const calls = upstream.requests.length;
      const firstReply = chat(token, { question: 'Total sales by region for 2021' }, 'taken-key');
      await until(() => upstream.requests.length > calls, 'the first request to reach the answerer');
      // What a retry's takeover leaves: the claim belongs to another run (the first one's renewals had failed).
      // The new claim id is made here, not by gen_random_uuid(): Citus refuses a VOLATILE function in a distributed UPDATE.
      await t.admin.query(`UPDATE idempotency_keys SET claim_id = $3, locked_until = $2 WHERE user_id = $1`, [
        'idem-taken',
        t.clock.now,
        randomUUID(),
      ]);
      open();
      const first = await firstReply;
      expect(first.status).toBe(409);
      expect(first.body.code).toBe('idempotency-in-progress');
      expect(await storedTurns('idem-taken')).toHaveLength(0);

      answerNormally();
      t.clock.advance(1);
      const retry = await chat(token, { question: 'Total sales by region for 2021' }, 'taken-key');
      expect(retry.status).toBe(200);
      expect(await storedTurns('idem-taken')).toHaveLength(1);
    } finally {
      open();
      answerNormally();
    }
  });

  it('when IDEMPOTENCY_TTL has passed, then the key runs anew, and the cleanup deletes expired keys', async () => {
    const token = t.token('idem-ttl');
    const body = { question: 'TTL question?', answer: 'TTL answer.' };
    const first = await storeTurn(token, undefined, body, 'ttl-key');
    expect(first.status).toBe(201);
    const expiring = await storeTurn(token, undefined, body, 'ttl-key-cleaned');
    expect(expiring.status).toBe(201);

    t.clock.advance(24 * HOUR + 60_000);
    const again = await storeTurn(token, undefined, body, 'ttl-key');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.session.session_id).not.toBe(first.body.session.session_id);

    const result = await runRetentionCleanup({
      db: t.database.scoped,
      clock: () => t.clock.now,
      log: silentLog,
      batchSize: 1,
      accessAuditRetentionMs: t.config.accessAuditRetentionMs,
    });
    expect(result.idempotencyKeys).toBeGreaterThanOrEqual(1);
    const { rows } = await t.admin.query<{ idempotency_key: string }>(
      'SELECT idempotency_key FROM idempotency_keys WHERE user_id = $1 ORDER BY idempotency_key',
      ['idem-ttl'],
    );
    expect(rows.map((r) => r.idempotency_key)).toEqual(['ttl-key']);
  });

  it('when 20 turns are written concurrently to one session, then they are numbered after the existing ones without gap or duplicate', async () => {
    const token = t.token('idem-numbering');
    const first = await storeTurn(token, undefined, { question: 'Existing 1?', answer: 'E1.' });
    const sessionId = first.body.session.session_id;
    await storeTurn(token, sessionId, { question: 'Existing 2?', answer: 'E2.' });

    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        storeTurn(token, sessionId, { question: `Concurrent question ${i}?`, answer: `Answer ${i}.` }, i % 2 ? `num-${i}` : undefined),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(201));
    const expected = Array.from({ length: 20 }, (_, i) => i + 3);
    expect(replies.map((r) => r.body.turn.turn_number).sort((a, b) => a - b)).toEqual(expected);
    expect(replies.map((r) => r.body.session.message_count).sort((a, b) => a - b)).toEqual(expected);
    const session = await t.request('GET', `/sessions/${sessionId}`, { token });
    expect(session.body.message_count).toBe(22);
    expect((await storedTurns('idem-numbering')).map((r) => r.turn_number)).toEqual([1, 2, ...expected]);
  });

  it('when 20 /memoryChat questions arrive concurrently in one session, then their turns are numbered without gap or duplicate', async () => {
    answerNormally();
    const token = t.token('idem-chat-numbering');
    const first = await chat(token, { question: 'Show me total sales by region for 2024' });
    const sessionId = first.body.conversation_metadata.conversation_id;
    const calls = upstream.requests.length;

    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        chat(token, { question: `Sales for region ${i} in 2024?`, session_id: sessionId }, i % 2 ? `chat-num-${i}` : undefined),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(upstream.requests.length - calls).toBe(20);
    const expected = Array.from({ length: 20 }, (_, i) => i + 2);
    expect(replies.map((r) => r.body.conversation_metadata.message_count).sort((a, b) => a - b)).toEqual(expected);
    const turns = await storedTurns('idem-chat-numbering');
    expect(turns.map((r) => r.turn_number)).toEqual([1, ...expected]);
    const { rows } = await t.admin.query<{ turn_count: number; last_turn_number: number }>(
      'SELECT turn_count, last_turn_number FROM sessions WHERE user_id = $1',
      ['idem-chat-numbering'],
    );
    expect(rows).toEqual([{ turn_count: 21, last_turn_number: 21 }]);
  });

  it('when the OpenAPI document is read, then both turn routes and /memoryChat declare the Idempotency-Key header', async () => {
    const spec = await t.request('GET', '/openapi.json');
    for (const path of ['/memoryChat', '/sessions/turns', '/sessions/{id}/turns']) {
      const parameters = spec.body.paths[path].post.parameters as { in: string; name: string }[];
      expect(parameters, path).toContainEqual(expect.objectContaining({ in: 'header', name: 'idempotency-key' }));
    }
  });
});
