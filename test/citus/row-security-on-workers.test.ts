import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedSession } from '../support/service/seed-memory.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

const HOUR = 3_600_000;

/**
 * Row-level security holds on the workers (docs/scaling.md#row-level-security-on-citus): a statement
 * with no user filter at all reads every shard, and each shard's policy sees the scope the
 * coordinator sent with SET LOCAL, so the caller counts their own rows only; without a scope, none.
 */
describe('row-level security on the Citus workers', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
    // Users spread over shards on both workers.
    for (let i = 0; i < 8; i++)
      await seedSession(t.admin, { userId: `rls-user-${i}`, turns: i + 1, expiresAt: new Date(Date.now() + HOUR) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('when a user scans every shard without a user filter, then each shard returns only that user’s rows', async () => {
    const { rows: placed } = await t.admin.query<{ nodes: number }>(
      `SELECT count(DISTINCT nodeport)::int AS nodes FROM citus_shards WHERE table_name = 'turns'::regclass`,
    );
    expect(placed[0]!.nodes).toBe(2);
    const { rows: all } = await t.admin.query<{ n: number }>('SELECT count(*)::int AS n FROM turns');
    expect(all[0]!.n).toBe(36);
    for (const i of [0, 3, 7]) {
      const scoped = t.database.scoped.asUser({ tenantId: 'default', userId: `rls-user-${i}` });
      const { rows } = await scoped.query<{ n: number; users: number }>(
        'SELECT count(*)::int AS n, count(DISTINCT user_id)::int AS users FROM turns',
      );
      expect(rows[0]).toEqual({ n: i + 1, users: 1 });
    }
  });

  it('when the service login reads without a scope, then the workers show it no row', async () => {
    const { rows } = await t.database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM turns');
    expect(rows[0]!.n).toBe(0);
  });

  it('when a user scope is taken with set_config (not sent to the workers), then the user sees none of their rows', async () => {
    // Why the service sends SET LOCAL on Citus: the single server's set_config(…, true) stays on the coordinator.
    const client = await t.database.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `SELECT set_config('role', 'memorychat_app', true), set_config('memorychat.tenant_id', 'default', true),
                set_config('memorychat.user_id', 'rls-user-7', true)`,
      );
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM turns');
      expect(rows[0]!.n).toBe(0);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
