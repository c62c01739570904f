import type { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeysUnder, keysMentioning, redisClient, TEST_REDIS_URL, uniquePrefix, waitFor } from '../../../support/databases/redis.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { countUserRows, rowsMentioning, seedSession } from '../../../support/service/seed-memory.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';
import { startTestWorker } from '../../../support/service/test-worker.js';

const HOUR = 3_600_000;

describe('GDPR export and erase on BullMQ', () => {
  const redis = redisClient();
  const prefix = uniquePrefix('gdpr');
  let t: TestApp;
  let worker: Worker;

  beforeAll(async () => {
    t = await startTestApp({ REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, JOB_BACKOFF_MS: '20' });
    worker = startTestWorker({ config: t.config, db: t.database.scoped, queue: t.app.queue, clock: () => t.clock.now });
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
  });

  const future = () => new Date(t.clock.now.getTime() + HOUR);

  it('when a user with 1,000 seeded turns across 20 sessions (and one keyed API turn) is erased, then no row or Redis key of theirs remains, the audit row stays and another user is untouched', async () => {
    const subject = 'erase-subject-5f2c9a';
    const bystander = 'bystander-8d41e7';
    const sessions: string[] = [];
    for (let i = 0; i < 20; i++)
      sessions.push(await seedSession(t.admin, { userId: subject, turns: 50, expiresAt: future(), summary: `summary for ${subject}` }));
    for (let i = 0; i < 3; i++) await seedSession(t.admin, { userId: bystander, turns: 30, expiresAt: future() });
    const queue = t.app.queue as import('../../../../services/infra/queue/bull-queue.js').BullJobQueue;

    // Copies of the subject elsewhere: a stored export, a completed summarization job (its payload
    // names the user), and a delayed job waiting in Redis; the bystander gets the same.
    const subjectToken = t.token(subject);
    const bystanderToken = t.token(bystander);
    for (const token of [subjectToken, bystanderToken]) {
      const exp = await t.request('POST', '/me/export', { token });
      expect((await gdprRequestFinished(t, exp.body.request_id, { token })).status).toBe('completed');
    }
    // A stored Idempotency-Key response holds a question and an answer too.
    const keyed = await t.request('POST', `/sessions/${sessions[2]}/turns`, {
      token: subjectToken,
      body: { question: 'keyed question', answer: 'keyed answer' },
      headers: { 'idempotency-key': 'erase-key-1' },
    });
    expect(keyed.status).toBe(201);
    await queue.enqueue('summarize', { tenantId: 'default', userId: subject, sessionId: sessions[0]! });
    await waitFor(async () => (await queue.queue.getCompleted()).some((j) => j.name === 'summarize'), 20_000, 'summarization');
    for (const userId of [subject, bystander]) {
      await queue.queue.add('summarize', { tenantId: 'default', userId, sessionId: sessions[1]! }, { delay: 600_000 });
    }
    expect(await keysMentioning(redis, prefix, subject)).not.toEqual([]);
    expect(Object.values(await rowsMentioning(t.admin, subject, ['gdpr_audit'])).some((n) => n > 0)).toBe(true);

    const bystanderBefore = await countUserRows(t.admin, bystander);
    const bystanderKeysBefore = (await keysMentioning(redis, prefix, bystander)).length;
    const bystanderExportsBefore = (await t.admin.query('SELECT count(*)::int AS n FROM gdpr_exports WHERE user_id = $1', [bystander]))
      .rows[0].n;
    expect(bystanderBefore).toEqual({ sessions: 3, turns: 90, embeddings: 90 });
    expect(await countUserRows(t.admin, subject)).toEqual({ sessions: 20, turns: 1001, embeddings: 1001 });

    const erase = await t.request('DELETE', '/me', { token: subjectToken });
    expect(erase.status).toBe(202);
    expect(erase.body).toMatchObject({ action: 'erase', status: 'queued', subject_user_id: subject });
    const done = await gdprRequestFinished(t, erase.body.request_id, { token: subjectToken });
    expect(done).toMatchObject({ status: 'completed', actor_user_id: subject, error_code: null });
    expect(done.counts).toMatchObject({ turns: 1001, sessions: 20, exports: 1, idempotency_keys: 1 });
    expect(done.counts.queued_jobs).toBeGreaterThanOrEqual(2);

    // A scan of every table and every Redis key of this queue: nothing names the subject but the audit row.
    const leftovers = await rowsMentioning(t.admin, subject, ['gdpr_audit']);
    expect(
      Object.values(leftovers).every((n) => n === 0),
      JSON.stringify(leftovers),
    ).toBe(true);
    expect(await keysMentioning(redis, prefix, subject)).toEqual([]);
    const audit = await t.admin.query('SELECT action, status, counts FROM gdpr_audit WHERE subject_user_id = $1 ORDER BY requested_at', [
      subject,
    ]);
    expect(audit.rows.map((r) => r.action)).toEqual(['export', 'erase']);
    expect(JSON.stringify(audit.rows)).not.toMatch(/Question|SELECT|summary for/);

    expect(await countUserRows(t.admin, bystander)).toEqual(bystanderBefore);
    expect((await keysMentioning(redis, prefix, bystander)).length).toBe(bystanderKeysBefore);
    expect((await t.admin.query('SELECT count(*)::int AS n FROM gdpr_exports WHERE user_id = $1', [bystander])).rows[0].n).toBe(
      bystanderExportsBefore,
    );

    // And through the routes: the old export is gone, a new export is empty.
    const oldExport = (await t.admin.query(`SELECT request_id FROM gdpr_audit WHERE subject_user_id = $1 AND action = 'export'`, [subject]))
      .rows[0].request_id;
    expect((await t.request('GET', `/gdpr/requests/${oldExport}/download`, { token: subjectToken })).body.code).toBe('export-expired');
    const again = await t.request('POST', '/me/export', { token: subjectToken });
    expect((await gdprRequestFinished(t, again.body.request_id, { token: subjectToken })).counts).toEqual({ sessions: 0, turns: 0 });
  });

  it('when an export is started by POST /me/export, then 202; the old GET still queues one for a release but answers Deprecation and a Link to POST', async () => {
    const token = t.token('post-exporter');
    const posted = await t.request('POST', '/me/export', { token });
    expect(posted.status).toBe(202);
    expect(posted.headers.get('deprecation')).toBeNull();
    expect((await gdprRequestFinished(t, posted.body.request_id, { token })).status).toBe('completed');
    const got = await t.request('GET', '/me/export', { token });
    expect(got.status).toBe(202);
    expect(got.headers.get('deprecation')).toMatch(/^@\d+$/);
    expect(got.headers.get('link')).toBe('</me/export>; rel="successor-version"');
  });

  it("when a user exports, then the download holds every one of their live turns and nothing of any other user's", async () => {
    const owner = 'exporter-3b7d';
    const other = 'other-user-9a1f';
    const live = [
      await seedSession(t.admin, { userId: owner, turns: 7, expiresAt: future() }),
      await seedSession(t.admin, { userId: owner, turns: 13, expiresAt: future() }),
    ];
    await seedSession(t.admin, { userId: owner, turns: 4, expiresAt: new Date(t.clock.now.getTime() - HOUR) });
    await seedSession(t.admin, { userId: other, turns: 9, expiresAt: future() });
    await seedSession(t.admin, { userId: owner, tenantId: 'tenant-b', turns: 3, expiresAt: future() });
    const token = t.token(owner);

    const accepted = await t.request('POST', '/me/export', { token });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('location')).toBe(`/gdpr/requests/${accepted.body.request_id}`);
    // Polls a second apart spend half of the default 120 requests a minute.
    expect(accepted.headers.get('retry-after')).toBe('1');
    const status = await gdprRequestFinished(t, accepted.body.request_id, { token });
    expect(status).toMatchObject({
      status: 'completed',
      counts: { sessions: 2, turns: 20 },
      download_url: `/gdpr/requests/${accepted.body.request_id}/download`,
    });
    expect((await t.request('GET', status.status_url, { token })).headers.get('retry-after')).toBeNull();

    const download = await t.request('GET', status.download_url, { token });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toContain('attachment');
    const doc = download.body;
    expect(doc).toMatchObject({ format: 'memorychat-export/1', user_id: owner, tenant_id: 'default' });
    const { rows } = await t.admin.query<{ session_id: string; turn_number: number }>(
      `SELECT t.session_id, t.turn_number FROM turns t JOIN sessions s USING (tenant_id, user_id, session_id)
       WHERE t.tenant_id = 'default' AND t.user_id = $1 AND s.expires_at > $2`,
      [owner, t.clock.now],
    );
    const exported = doc.sessions.flatMap((s: any) => s.turns.map((turn: any) => `${s.session_id}/${turn.turn_number}`)).sort();
    expect(exported).toEqual(rows.map((r) => `${r.session_id}/${r.turn_number}`).sort());
    expect(doc.sessions.map((s: any) => s.session_id).sort()).toEqual([...live].sort());
    const turn = doc.sessions[0].turns[0];
    expect(turn.sql_query).toMatch(/^SELECT/);
    expect(turn.execution_result).toMatchObject({ owner });
    expect(turn).not.toHaveProperty('embedding');
    expect(JSON.stringify(doc)).not.toContain(other);

    expect((await t.request('GET', status.download_url, { token: t.token(other) })).status).toBe(404);
    expect((await t.request('GET', status.download_url, { token: t.token('boss', { roles: ['memory-admin'] }) })).status).toBe(200);
    expect(
      (await t.request('GET', status.download_url, { token: t.token('boss', { roles: ['memory-admin'], tenant: 'tenant-b' }) })).status,
    ).toBe(404);
  });

  it('when a non-admin calls the admin routes, then 403; an admin acts within their own tenant only', async () => {
    const user = t.token('plain-user');
    const admin = t.token('admin-7', { roles: ['memory-admin'] });
    for (const [method, url] of [
      ['POST', '/admin/users/someone/export'],
      ['DELETE', '/admin/users/someone'],
      ['GET', '/admin/jobs'],
    ] as const) {
      const res = await t.request(method, url, { token: user });
      expect(res.status, url).toBe(403);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.code).toBe('forbidden');
    }
    await seedSession(t.admin, { userId: 'managed-user', turns: 2, expiresAt: future() });
    const accepted = await t.request('POST', '/admin/users/managed-user/export', { token: admin });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ actor_user_id: 'admin-7', subject_user_id: 'managed-user' });
    expect((await gdprRequestFinished(t, accepted.body.request_id, { token: admin })).counts).toEqual({ sessions: 1, turns: 2 });
    // The subject sees requests about them; another user and another tenant's admin do not.
    expect((await t.request('GET', `/gdpr/requests/${accepted.body.request_id}`, { token: t.token('managed-user') })).status).toBe(200);
    expect((await t.request('GET', `/gdpr/requests/${accepted.body.request_id}`, { token: user })).body.code).toBe(
      'gdpr-request-not-found',
    );
    const foreignAdmin = t.token('admin-x', { roles: ['memory-admin'], tenant: 'tenant-b' });
    expect((await t.request('GET', `/gdpr/requests/${accepted.body.request_id}`, { token: foreignAdmin })).status).toBe(404);

    const erase = await t.request('DELETE', '/admin/users/managed-user', { token: admin });
    expect((await gdprRequestFinished(t, erase.body.request_id, { token: admin })).counts).toMatchObject({ sessions: 1, turns: 2 });
    expect(await countUserRows(t.admin, 'managed-user')).toEqual({ sessions: 0, turns: 0, embeddings: 0 });
  });

  it('when the request id is malformed, unknown, or the export is not finished, then a problem with a stable code', async () => {
    const token = t.token('asker');
    const bad = await t.request('GET', '/gdpr/requests/not-a-uuid', { token });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation-failed');
    expect((await t.request('GET', `/gdpr/requests/${crypto.randomUUID()}`, { token })).body.code).toBe('gdpr-request-not-found');
    const pending = crypto.randomUUID();
    await t.admin.query(
      `INSERT INTO gdpr_audit (tenant_id, request_id, action, actor_user_id, subject_user_id, status, requested_at)
       VALUES ('default', $1, 'export', 'asker', 'asker', 'queued', now())`,
      [pending],
    );
    const notReady = await t.request('GET', `/gdpr/requests/${pending}/download`, { token });
    expect(notReady.status).toBe(409);
    expect(notReady.body.code).toBe('export-not-ready');
    expect((await t.request('POST', '/me/export')).status).toBe(401);
  });
});

describe('GDPR requests waiting for a worker', () => {
  const redis = redisClient();
  const prefix = uniquePrefix('gdpr-waiting');
  let t: TestApp;
  // No worker reads this queue: every request stays queued.
  beforeAll(async () => {
    t = await startTestApp({ REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '30' });
  });
  afterAll(async () => {
    await t?.close();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
  });

  it('when a request is queued under a limit of 30 requests a minute, then its 202 and each status say to poll again in 4 s (half of the limit at most), and polls sent faster are refused past the limit', async () => {
    const token = t.token('patient-poller');
    const accepted = await t.request('DELETE', '/me', { token });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('retry-after')).toBe('4');
    const polls = [];
    for (let i = 0; i < 20; i++) polls.push(await t.request('GET', accepted.body.status_url, { token }));
    expect(polls.map((p) => [p.status, p.body.status, p.headers.get('retry-after')])).toEqual(polls.map(() => [200, 'queued', '4']));
    // 20 polls in moments, as no client following Retry-After sends them: past 30 a minute, refused.
    const refused = [];
    for (let i = 0; i < 15; i++) refused.push((await t.request('GET', accepted.body.status_url, { token })).status);
    expect(refused).toContain(429);
  });
});

describe('GDPR without Redis (in-process queue)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({});
  });
  afterAll(async () => t?.close());

  it("when there is no REDIS_URL, then export and erase run in the API process, and admins count only their own tenant's jobs and the system's", async () => {
    expect(t.app.queue.mode).toBe('in-process');
    await seedSession(t.admin, { userId: 'solo', turns: 12, expiresAt: new Date(t.clock.now.getTime() + HOUR) });
    const token = t.token('solo');
    const exp = await t.request('POST', '/me/export', { token });
    expect((await gdprRequestFinished(t, exp.body.request_id, { token })).counts).toEqual({ sessions: 1, turns: 12 });
    const download = await t.request('GET', `/gdpr/requests/${exp.body.request_id}/download`, { token });
    expect(download.body.sessions[0].turns).toHaveLength(12);
    const erase = await t.request('DELETE', '/me', { token });
    expect((await gdprRequestFinished(t, erase.body.request_id, { token })).counts).toMatchObject({
      turns: 12,
      sessions: 1,
      exports: 1,
    });
    expect(Object.values(await rowsMentioning(t.admin, 'solo', ['gdpr_audit'])).every((n) => n === 0)).toBe(true);
    const counts = async (tenant: string) =>
      (await t.request('GET', '/admin/jobs', { token: t.token('ops', { roles: ['memory-admin'], tenant }) })).body.counts;
    // The export and the erasure are the default tenant's: another tenant's admin counts only system jobs.
    expect((await counts('default')).completed - (await counts('tenant-without-jobs')).completed).toBeGreaterThanOrEqual(2);
  });

  it('when the process died between recording a request and queueing its job, then the cleanup queues it again', async () => {
    await seedSession(t.admin, { userId: 'interrupted', turns: 3, expiresAt: new Date(t.clock.now.getTime() + HOUR) });
    const record = async (requestedAt: Date) => {
      const requestId = crypto.randomUUID();
      await t.admin.query(
        `INSERT INTO gdpr_audit (tenant_id, request_id, action, actor_user_id, subject_user_id, status, requested_at)
         VALUES ('default', $1, 'export', 'interrupted', 'interrupted', 'queued', $2)`,
        [requestId, requestedAt],
      );
      return requestId;
    };
    // Recorded, committed, never queued: as a crash right after the audit row leaves it.
    const lost = await record(new Date(t.clock.now.getTime() - 10 * 60_000));
    // Recorded a moment ago: its own request is about to queue it.
    const recent = await record(t.clock.now);

    await t.app.queue.enqueue('cleanup', {});
    const token = t.token('interrupted');
    expect(await gdprRequestFinished(t, lost, { token })).toMatchObject({ status: 'completed', counts: { sessions: 1, turns: 3 } });
    expect((await t.request('GET', `/gdpr/requests/${recent}`, { token })).body.status).toBe('queued');
  });
});
