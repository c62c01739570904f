import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitFor } from '../../../support/databases/redis.js';
import { type RecordedRequest, sendJson } from '../../../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { countUserRows, rowsMentioning } from '../../../support/service/seed-memory.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

/** The server project provides its database server (test/support/vitest/global-setup-server.ts). */
const ON_SERVER = inject('serverDatabase') !== undefined;

/**
 * An erasure is a barrier (docs/design.md §7): a request that was already waiting for its answer
 * when the user's erasure began stores nothing when the answer arrives.
 */
describe('an erasure while a /memoryChat is in flight', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  /** Answers held by the fake upstream until the test lets them go. */
  const held: (() => void)[] = [];

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
  });
  afterAll(async () => {
    for (const release of held.splice(0)) release();
    await stopServiceWithUpstream({ t, upstream });
  });

  function answerNormally() {
    upstream.handle((req, res) => sendJson(res, 200, salesReply(req.body.question)));
  }
  /** From now on the upstream answers only when the test releases it. */
  function holdAnswers() {
    upstream.handle((req: RecordedRequest, res) => {
      held.push(() => sendJson(res, 200, salesReply(req.body.question)));
    });
  }

  async function eraseAndWait(token: string) {
    const erase = await t.request('DELETE', '/me', { token });
    expect(erase.status).toBe(202);
    return gdprRequestFinished(t, erase.body.request_id, { token });
  }

  async function storedFor(userId: string) {
    const idempotency = await t.admin.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE user_id = $1', [userId]);
    return { ...(await countUserRows(t.admin, userId)), idempotency_keys: idempotency.rows[0].n };
  }

  const cases = [
    { what: 'starting a new session', resumes: false, keyed: false },
    { what: 'starting a new session with an Idempotency-Key', resumes: false, keyed: true },
    { what: 'resuming the session it had', resumes: true, keyed: false },
  ];
  for (const { what, resumes, keyed } of cases) {
    it(`when a user is erased while their /memoryChat ${what} waits for its answer, then the answer that arrives after the erasure stores nothing and the request gets erased-during-request`, async () => {
      const user = `in-flight-${resumes ? 'resume' : 'new'}${keyed ? '-keyed' : ''}`;
      const token = t.token(user);
      answerNormally();
      let sessionId: string | undefined;
      if (resumes) {
        const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Sales by region for 2023' } });
        expect(first.status).toBe(200);
        sessionId = first.body.conversation_metadata.conversation_id;
      }

      holdAnswers();
      const heldBefore = held.length;
      const inFlight = t.request('POST', '/memoryChat', {
        token,
        body: { question: 'Sales by region for 2024', ...(sessionId ? { session_id: sessionId } : {}) },
        headers: keyed ? { 'idempotency-key': `in-flight-${user}` } : {},
      });
      await waitFor(async () => held.length > heldBefore, 10_000, 'the question to reach the upstream');

      expect((await eraseAndWait(token)).status).toBe('completed');
      held.pop()!();
      const reply = await inFlight;

      expect(reply.status).toBe(409);
      expect(reply.body.code).toBe('erased-during-request');
      expect(await storedFor(user)).toEqual({ sessions: 0, turns: 0, embeddings: 0, idempotency_keys: 0 });
      const leftovers = await rowsMentioning(t.admin, user, ['gdpr_audit']);
      expect(
        Object.values(leftovers).every((n) => n === 0),
        JSON.stringify(leftovers),
      ).toBe(true);

      // The barrier holds back only requests that started before the erasure: the user starts afresh.
      answerNormally();
      const after = await t.request('POST', '/memoryChat', { token, body: { question: 'Sales by region for 2025' } });
      expect(after.status).toBe(200);
      expect((await storedFor(user)).turns).toBe(1);
    });
  }

  // The erasure is held at the instant between the request's epoch read and its keyed session's
  // insert by taking the barrier's lock as the erase job does. The embedded database has one session
  // for every connection, so a transaction held open by the test would hold the service too.
  it.skipIf(!ON_SERVER)(
    'when a user is erased between the start of a /memoryChat with a session_key and the making of its session, then no session is made',
    async () => {
      const user = 'erased-while-keying';
      const token = t.token(user);
      answerNormally();
      // One connection of the test's own, above row-level security, for the whole transaction.
      const admin = await t.admin.connect();
      try {
        await admin.query('BEGIN');
        await admin.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', ['default', user]);
        const inFlight = t.request('POST', '/memoryChat', {
          token,
          body: { question: 'Sales by region for 2024', session_key: 'slack:T1:C1' },
        });
        // The request reads epoch 0, then waits for the lock to make its keyed session.
        await waitFor(
          async () => {
            const { rows } = await admin.query(
              "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND mode = 'ShareLock'",
            );
            return rows[0].n > 0;
          },
          10_000,
          'the keyed session to wait for the erasure',
        );
        await admin.query(
          `INSERT INTO erasures (tenant_id, user_digest, epoch) VALUES ($1, memorychat_user_digest($2), 1)
           ON CONFLICT (tenant_id, user_digest) DO UPDATE SET epoch = erasures.epoch + 1`,
          ['default', user],
        );
        await admin.query('COMMIT');
        const reply = await inFlight;
        expect(reply.status).toBe(409);
        expect(reply.body.code).toBe('erased-during-request');
        expect((await storedFor(user)).sessions).toBe(0);
      } finally {
        admin.release();
      }
    },
  );
});
