import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGdprErase } from '../../../../services/core/gdpr/erase.js';
import { type ScopedDatabase, scopedDatabase } from '../../../../services/db/row-security.js';
import type { UserTable } from '../../../../services/db/user-tables.js';
import { deleteKeysUnder, redisClient, TEST_REDIS_URL, uniquePrefix, waitFor } from '../../../support/databases/redis.js';
import { countUserRows, seedSession } from '../../../support/service/seed-memory.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';
import { silentLog } from '../../../support/service/test-worker.js';

const HOUR = 3_600_000;

/**
 * Issue 39: one user queued 120 erasures a minute, and each, even of a user with no data, rewrote every
 * erased table. Requests are queued here with no worker running, so they stay pending until this test
 * runs their job itself, and it decides where a run is cut short.
 */
describe('erasure requests: merged, limited, counted and reclaimed once', () => {
  const redis = redisClient();
  const prefix = uniquePrefix('erase-limit');
  let t: TestApp;
  // Each test its own admin: an admin's erase requests are limited too.
  const admin = (name = expect.getState().currentTestName ?? '') => t.token(`admin ${name}`.slice(0, 100), { roles: ['memory-admin'] });
  const future = () => new Date(t.clock.now.getTime() + HOUR);

  beforeAll(async () => {
    t = await startTestApp({ REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, GDPR_ERASE_REQUESTS_PER_HOUR: '2' });
  });
  afterAll(async () => {
    await t?.close();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
  });

  /** The erase job as the worker runs it, on `db` (the service's, or one that fails part-way). */
  const eraseJob = (requestId: string, db: ScopedDatabase = t.database.scoped, batchSize = 4) =>
    runGdprErase(
      {
        db,
        clock: () => t.clock.now,
        log: silentLog,
        batchSize,
        removeQueuedJobs: (tenant, user) => t.app.queue.removeUserJobs(tenant, user),
      },
      { tenantId: 'default', requestId },
    );

  /** The service's database, whose subject transactions fail from the `failAt`-th on (a worker killed there), and whose reclaims are recorded. */
  const observed = (options: { failAt?: number; failReclaim?: boolean } = {}) => {
    const db = t.database.scoped;
    const reclaims: UserTable[][] = [];
    let transactions = 0;
    const wrapped: ScopedDatabase = {
      ...db,
      asUser: (owner) => {
        const runner = db.asUser(owner);
        return {
          ...runner,
          transaction: (work) => {
            transactions += 1;
            if (options.failAt !== undefined && transactions >= options.failAt) return Promise.reject(new Error('worker killed'));
            return runner.transaction(work);
          },
        };
      },
      reclaimErasedRows: async (tables) => {
        reclaims.push([...tables]);
        if (options.failReclaim) throw new Error('worker killed during the reclaim');
        await db.reclaimErasedRows(tables);
      },
    };
    return { db: wrapped, reclaims };
  };

  const auditOf = async (requestId: string) =>
    (await t.admin.query('SELECT status, counts FROM gdpr_audit WHERE request_id = $1', [requestId])).rows[0];

  it('when a user asks to be erased again while their erasure is queued, and an admin asks too, then each gets 202 with the pending request', async () => {
    const token = t.token('erase-twice');
    const first = await t.request('DELETE', '/me', { token });
    expect(first.status).toBe(202);
    const second = await t.request('DELETE', '/me', { token });
    expect(second.status).toBe(202);
    expect(second.body.request_id).toBe(first.body.request_id);
    expect(second.headers.get('location')).toBe(`/gdpr/requests/${first.body.request_id}`);
    const byAdmin = await t.request('DELETE', '/admin/users/erase-twice', { token: admin() });
    expect(byAdmin.status).toBe(202);
    expect(byAdmin.body.request_id).toBe(first.body.request_id);
    const { rows } = await t.admin.query(
      `SELECT count(*)::int AS n FROM gdpr_audit WHERE subject_user_id = 'erase-twice' AND action = 'erase'`,
    );
    expect(rows[0].n).toBe(1);

    await eraseJob(first.body.request_id);
    const after = await t.request('DELETE', '/me', { token });
    expect(after.status).toBe(202);
    expect(after.body.request_id).not.toBe(first.body.request_id);
    await eraseJob(after.body.request_id);
  });

  it('when a user has asked for GDPR_ERASE_REQUESTS_PER_HOUR erasures in the hour, or an admin for that many users, then the next gets 429 erase-requests-limited with Retry-After', async () => {
    // The previous test's subject made 2 requests, both finished: a third is over the limit.
    const token = t.token('erase-twice');
    const limited = await t.request('DELETE', '/me', { token });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toContain('application/problem+json');
    expect(limited.body.code).toBe('erase-requests-limited');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);

    // An admin's requests count against the admin as well as each subject.
    const bulkAdmin = t.token('bulk-admin', { roles: ['memory-admin'] });
    for (const user of ['bulk-1', 'bulk-2'])
      expect((await t.request('DELETE', `/admin/users/${user}`, { token: bulkAdmin })).status).toBe(202);
    const third = await t.request('DELETE', '/admin/users/bulk-3', { token: bulkAdmin });
    expect(third.status).toBe(429);
    expect(third.body.code).toBe('erase-requests-limited');
    // A user's own request joins the pending one the admin made: nothing new, so nothing limited.
    expect((await t.request('DELETE', '/me', { token: t.token('bulk-1') })).status).toBe(202);

    // An hour later the window has moved on.
    t.clock.advance(HOUR + 1000);
    const later = await t.request('DELETE', '/me', { token });
    expect(later.status).toBe(202);
    await eraseJob(later.body.request_id);
  });

  it('when a worker is killed after some batches of an erasure and the job is retried, then the audit row counts every row deleted, over both attempts', async () => {
    const subject = 'erase-killed';
    for (let i = 0; i < 3; i++) await seedSession(t.admin, { userId: subject, turns: 10, expiresAt: future() });
    expect(await countUserRows(t.admin, subject)).toEqual({ sessions: 3, turns: 30, embeddings: 30 });
    const request = await t.request('DELETE', `/admin/users/${subject}`, { token: admin() });

    // Transactions 1 (the erase barrier) and 2-4 (three batches of 4 turns) commit; the fifth fails.
    await expect(eraseJob(request.body.request_id, observed({ failAt: 5 }).db)).rejects.toThrow('worker killed');
    expect((await auditOf(request.body.request_id)).counts).toEqual({ turns: 12 });
    expect((await countUserRows(t.admin, subject)).turns).toBe(18);

    const { counts, turnsDeletedNow } = await eraseJob(request.body.request_id);
    expect(counts).toMatchObject({ turns: 30, sessions: 3 });
    expect(turnsDeletedNow).toBe(18);
    const audit = await auditOf(request.body.request_id);
    expect(audit.status).toBe('completed');
    expect(audit.counts).toMatchObject({ turns: 30, sessions: 3, exports: 0, idempotency_keys: 0, linked_identities: 0 });
    expect(await countUserRows(t.admin, subject)).toEqual({ sessions: 0, turns: 0, embeddings: 0 });
  });

  it('when a worker is killed during the reclaim, the last step, and the job is retried, then the row is completed with the counts of the first attempt, not 0/0/0, and the reclaim runs again', async () => {
    const subject = 'erase-killed-late';
    await seedSession(t.admin, { userId: subject, turns: 6, expiresAt: future() });
    const request = await t.request('DELETE', `/admin/users/${subject}`, { token: admin() });

    const killed = observed({ failReclaim: true });
    await expect(eraseJob(request.body.request_id, killed.db)).rejects.toThrow('worker killed');
    const retried = observed();
    await eraseJob(request.body.request_id, retried.db);
    expect((await auditOf(request.body.request_id)).counts).toMatchObject({ turns: 6, sessions: 1 });
    // Nothing was left to delete on the retry, but the first attempt's rows are still in the files.
    expect(retried.reclaims).toEqual([['turns', 'sessions', 'access_audit']]);
  });

  it('when a user with no data is erased, then no table is rewritten; when a user with turns is, then only the tables with deleted rows are', async () => {
    const empty = await t.request('DELETE', '/admin/users/erase-nobody', { token: admin() });
    const nobody = observed();
    await eraseJob(empty.body.request_id, nobody.db);
    expect(nobody.reclaims).toEqual([]);
    expect((await auditOf(empty.body.request_id)).status).toBe('completed');

    const subject = 'erase-some-turns';
    await seedSession(t.admin, { userId: subject, turns: 3, expiresAt: future() });
    const some = await t.request('DELETE', '/me', { token: t.token(subject) });
    const someone = observed();
    await eraseJob(some.body.request_id, someone.db);
    expect(someone.reclaims).toEqual([['turns', 'sessions', 'access_audit']]);
  });

  it('when three users with turns are erased at once and another tenant reads meanwhile, then the read is answered while they run and one VACUUM covers all three', async () => {
    const statements: string[] = [];
    // The service's database, as it is set up for this database, with a window, whose statements are recorded.
    const db = scopedDatabase(recording(t.database.pool, statements), {
      purgeStatisticsAndWal: t.database.embedded,
      blockingIndexBuilds: t.database.embedded,
      reclaimWindowMs: 5000,
    });
    await seedSession(t.admin, { tenantId: 'other-tenant', userId: 'reader', turns: 200, expiresAt: future() });
    const requests: string[] = [];
    for (const user of ['erase-together-1', 'erase-together-2', 'erase-together-3']) {
      await seedSession(t.admin, { userId: user, turns: 5, expiresAt: future() });
      requests.push((await t.request('DELETE', '/me', { token: t.token(user) })).body.request_id);
    }
    const erasures = Promise.all(requests.map((id) => eraseJob(id, db)));
    // All three have deleted their rows and wait in the reclaim's window.
    await waitFor(
      async () => (await t.admin.query(`SELECT count(*)::int AS n FROM turns WHERE user_id LIKE 'erase-together-%'`)).rows[0].n === 0,
      20_000,
      'the deletions',
    );
    const read = await t.request('GET', '/sessions', { token: t.token('reader', { tenant: 'other-tenant' }) });
    expect(read.status).toBe(200);
    const statuses = await t.admin.query('SELECT status FROM gdpr_audit WHERE request_id = ANY($1)', [requests]);
    expect(statuses.rows.map((r) => r.status)).toEqual(['running', 'running', 'running']);
    await erasures;
    expect(statements.filter((s) => /^VACUUM\b/.test(s) && /\bturns\b/.test(s))).toHaveLength(1);
  });
});

/** `pool`, recording the text of every statement run through it or through a client it lends. */
function recording(pool: pg.Pool, statements: string[]): pg.Pool {
  const record = (statement: unknown) =>
    statements.push(typeof statement === 'string' ? statement : String((statement as pg.QueryConfig).text));
  const queries = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, key) {
        const value = Reflect.get(object, key, object);
        if (key === 'query')
          return (statement: unknown, ...rest: unknown[]) => {
            record(statement);
            return (value as (...args: unknown[]) => unknown).call(object, statement, ...rest);
          };
        if (key === 'connect') return async () => queries(await (value as () => Promise<pg.PoolClient>).call(object));
        return typeof value === 'function' ? value.bind(object) : value;
      },
    });
  return queries(pool);
}
