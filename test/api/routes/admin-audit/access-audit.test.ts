import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRetentionCleanup } from '../../../../services/core/jobs/retention-cleanup.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

const DAY = 86_400_000;
const silentLog = { info: () => {}, warn: () => {}, error: () => {} };

describe('the access audit (GET /admin/audit)', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await startTestApp({ ACCESS_AUDIT_RETENTION: '30d' });
    admin = t.token('boss', { roles: ['memory-admin'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  const audit = async (query = '', token = admin) => t.request('GET', `/admin/audit${query}`, { token });

  it("when a user exports and an admin reads and downloads it, then each access is an entry of the admin's tenant", async () => {
    const user = t.token('audited-user');
    await t.request('POST', '/sessions/turns', { token: user, body: { question: 'q', answer: 'a' } });
    const exported = await t.request('POST', '/me/export', { token: user, headers: { 'x-request-id': 'export-call-1' } });
    const requestId = exported.body.request_id;
    expect((await gdprRequestFinished(t, requestId, { token: user })).status).toBe('completed');

    // The test clock stands still unless moved: each access a second later, so the order is certain.
    t.clock.advance(1000);
    expect((await t.request('GET', `/gdpr/requests/${requestId}`, { token: admin })).status).toBe(200);
    t.clock.advance(1000);
    expect((await t.request('GET', `/gdpr/requests/${requestId}/download`, { token: admin })).status).toBe(200);
    t.clock.advance(1000);
    expect((await t.request('GET', `/gdpr/requests/${requestId}/download`, { token: user })).status).toBe(200);

    const res = await audit('?user_id=audited-user');
    expect(res.status).toBe(200);
    expect(res.body.entries.map((e: any) => [e.action, e.actor_user_id, e.subject_user_id, e.target])).toEqual([
      ['download', 'audited-user', 'audited-user', requestId],
      ['download', 'boss', 'audited-user', requestId],
      ['admin_read', 'boss', 'audited-user', requestId],
      ['export', 'audited-user', 'audited-user', requestId],
    ]);
    expect(res.body.entries.at(-1).http_request_id).toBe('export-call-1');
    expect(res.body.next_cursor).toBeNull();

    // The subject polling their own request is not an access by someone else.
    expect(res.body.entries.filter((e: any) => e.action === 'admin_read' && e.actor_user_id === 'audited-user')).toEqual([]);
  });

  it('when an admin erases a user, then the erasure is an entry, and filters and pages narrow the list', async () => {
    t.clock.advance(1000);
    const erased = await t.request('DELETE', '/admin/users/leaver', { token: admin });
    expect(erased.status).toBe(202);
    expect((await gdprRequestFinished(t, erased.headers.get('location')!, { token: admin })).status).toBe('completed');

    // The erased user's entries stay, under the pseudonym the logs use instead of their id.
    expect((await audit('?action=erase')).body.entries).toMatchObject([
      { action: 'erase', actor_user_id: 'boss', subject_user_id: expect.stringMatching(/^erased:[0-9a-f]{16}$/) },
    ]);
    expect((await audit('?user_id=leaver')).body.entries).toEqual([]);
    const future = new Date(t.clock.now.getTime() + DAY).toISOString();
    expect((await audit(`?from=${encodeURIComponent(future)}`)).body.entries).toEqual([]);

    const first = await audit('?limit=2');
    expect(first.body.entries).toHaveLength(2);
    const rest = await audit(`?limit=10&cursor=${first.body.next_cursor}`);
    const all = (await audit('?limit=10')).body.entries;
    expect([...first.body.entries, ...rest.body.entries]).toEqual(all);
    expect(all).toHaveLength(5);
  });

  it('when the caller is not an admin of the tenant, then they see no entry of it', async () => {
    expect((await audit('', t.token('audited-user'))).status).toBe(403);
    const otherTenant = await audit('', t.token('boss', { roles: ['memory-admin'], tenant: 'tenant-b' }));
    expect(otherTenant.body.entries).toEqual([]);
    expect((await audit('?cursor=not-a-cursor')).body.code).toBe('invalid-cursor');
    expect((await audit('?action=read')).status).toBe(400);
  });

  it('when the service tries to change or delete an entry, then the database refuses: the audit is append-only', async () => {
    const asAdmin = t.database.scoped.asUser({ tenantId: 'default', userId: 'boss', tenantAdmin: true });
    await expect(asAdmin.query(`UPDATE access_audit SET action = 'export'`)).rejects.toThrow(/permission denied/);
    await expect(asAdmin.query('DELETE FROM access_audit')).rejects.toThrow(/permission denied/);
  });

  it('when entries are older than ACCESS_AUDIT_RETENTION, then retention cleanup deletes them', async () => {
    t.clock.advance(31 * DAY);
    const result = await runRetentionCleanup({
      db: t.database.scoped,
      clock: () => t.clock.now,
      log: silentLog,
      batchSize: 2,
      accessAuditRetentionMs: t.config.accessAuditRetentionMs,
    });
    expect(result.accessAudit).toBeGreaterThanOrEqual(5);
    expect((await audit()).body.entries).toEqual([]);
  });
});
