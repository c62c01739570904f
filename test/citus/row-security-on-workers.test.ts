import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopedDatabase } from '../../services/db/row-security.js';
import { droppedDatabasePool } from '../support/databases/postgres-server.js';
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

  it('when a statement on the user’s shard scans its tables without a user filter, then the worker returns only that user’s rows', async () => {
    // A user on the same shard as rls-user-0, so the shard itself holds another user's rows.
    const { rows: mates } = await t.admin.query<{ user_id: string }>(
      `SELECT 'rls-mate-' || i AS user_id FROM generate_series(1, 200) i
       WHERE get_shard_id_for_distribution_column('turns', 'rls-mate-' || i) = get_shard_id_for_distribution_column('turns', 'rls-user-0')
       LIMIT 1`,
    );
    const mate = mates[0]!.user_id;
    await seedSession(t.admin, { userId: mate, turns: 5, expiresAt: new Date(Date.now() + HOUR) });
    const { rows: shard } = await t.admin.query<{ users: number }>(
      `SELECT count(DISTINCT user_id)::int AS users FROM turns WHERE user_id IN ('rls-user-0', $1)`,
      [mate],
    );
    expect(shard[0]!.users).toBe(2);
    for (const [user, n] of [
      ['rls-user-0', 1],
      [mate, 5],
      ['rls-user-6', 7],
    ] as const) {
      const scoped = t.database.scoped.asUser({ tenantId: 'default', userId: user });
      const { rows } = await scoped.query<{ n: number; users: number; who: string; role: string }>({
        name: 'mc_test_user_shard_scan',
        text: `SELECT count(*)::int AS n, count(DISTINCT user_id)::int AS users, min(user_id) AS who, current_user AS role,
                      (SELECT count(*)::int FROM sessions) AS sessions
               FROM turns`,
        onUserShard: true,
      } as pg.QueryConfig);
      expect(rows[0]).toEqual({ n, users: 1, who: user, role: 'memorychat_app', sessions: 1 });
    }
  });

  it('when an append goes as a call on the user’s shard, then its writes with no user filter reach only the caller’s rows, and off their worker it refuses', async () => {
    const db = t.database.scoped.asUser({ tenantId: 'default', userId: 'rls-user-2' });
    const marked = async (key: string) =>
      (await t.admin.query<{ user_id: string }>('SELECT user_id FROM sessions WHERE slots ? $1 ORDER BY user_id', [key])).rows.map(
        (r) => r.user_id,
      );
    const appended = await db.appendOnUserShard!(() => ({
      session: {
        name: 'mc_test_touch_every_session',
        text: `UPDATE sessions SET slots = slots || '{"touched": true}' RETURNING user_id, last_turn_number`,
        values: [],
      },
      turn: { name: 'mc_test_turn_number', text: 'SELECT $1::integer + 0 AS turn_number', values: [0] },
      barrier: {
        name: 'mc_erase_barrier',
        text: 'SELECT memorychat_erase_barrier($1, $2, $3::bigint)',
        values: ['default', 'rls-user-2', '0'],
      },
    }));
    expect(appended).toEqual({ session: { user_id: 'rls-user-2', last_turn_number: 3 }, turn_number: 3 });
    expect(await marked('touched')).toEqual(['rls-user-2']);

    // In a transaction block Citus runs the call on the coordinator, which holds no shard of the user.
    const offWorker = db.transaction((tx) =>
      tx.query(
        'SELECT memorychat_append_on_user_shard($1, $2, $3, $4, $5, $6::text[], $7, $8, $9::text[], $10, $11, $12, $13, $14::text[])',
        [
          'rls-user-2',
          'default',
          'off',
          'mc_test_touch_off_worker',
          `UPDATE sessions SET slots = slots || '{"off-worker": true}' RETURNING last_turn_number`,
          [],
          'mc_test_turn_number',
          'SELECT $1::integer + 0 AS turn_number',
          ['0'],
          0,
          null,
          null,
          null,
          null,
        ],
      ),
    );
    await expect(offWorker).rejects.toMatchObject({ code: 'ME002' });
    expect(await marked('off-worker')).toEqual([]);
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

  describe('through a pool of one connection that records what the nodes report', () => {
    let pool: pg.Pool;
    const notices: string[] = [];

    beforeAll(() => {
      pool = droppedDatabasePool({ ...t.database.pool.options, max: 1 });
      pool.on('connect', (client) => client.on('notice', (notice) => notices.push(notice.message ?? String(notice))));
    });
    afterAll(async () => {
      await pool?.end();
    });

    it('when statements and transactions run under a scope, then no node warns about them (each SET LOCAL goes to the workers alone)', async () => {
      // Sent as one "BEGIN; SET LOCAL …" string, Citus made each worker run that whole string again for
      // every propagated SET: five "there is already a transaction in progress" warnings per statement.
      const user = scopedDatabase(pool).asUser({ tenantId: 'default', userId: 'rls-user-5' });
      const { rows } = await user.query<{ n: number }>('SELECT count(*)::int AS n FROM turns');
      const inTransaction = await user.transaction(async (tx) => {
        const first = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM turns');
        const second = await tx.query<{ user_id: string }>(`SELECT current_setting('memorychat.user_id') AS user_id`);
        return [first.rows[0]!.n, second.rows[0]!.user_id];
      });
      expect([rows[0]!.n, ...inTransaction]).toEqual([6, 6, 'rls-user-5']);
      expect(notices).toEqual([]);
    });

    it('when a statement goes as a call on the user’s shard, then Citus delegates it to the worker, and a failed one leaves the connection to the next scope', async () => {
      const debugPool = droppedDatabasePool({ ...t.database.pool.options, max: 1, options: '-c client_min_messages=debug1' });
      const debugNotices: string[] = [];
      debugPool.on('connect', (client) => client.on('notice', (notice) => debugNotices.push(notice.message ?? String(notice))));
      try {
        const scoped = scopedDatabase(debugPool);
        const statement = (text: string) => ({ name: `mc_test_${text.length}`, text, onUserShard: true }) as pg.QueryConfig;
        const { rows } = await scoped
          .asUser({ tenantId: 'default', userId: 'rls-user-4' })
          .query(statement('SELECT count(*)::int AS n FROM turns'));
        expect(rows).toEqual([{ n: 5 }]);
        expect(debugNotices).toContain('pushing down the function call');
        await expect(
          scoped.asUser({ tenantId: 'default', userId: 'rls-user-4' }).query(statement('SELECT count(*) / 0 AS n FROM turns')),
        ).rejects.toThrow(/division by zero/);
        const { rows: next } = await scoped
          .asUser({ tenantId: 'default', userId: 'rls-user-1' })
          .query(statement(`SELECT count(*)::int AS n, current_setting('memorychat.user_id') AS user_id FROM turns`));
        expect(next).toEqual([{ n: 2, user_id: 'rls-user-1' }]);
        const { rows: state } = await debugPool.query<{ open: boolean; user_id: string }>(
          `SELECT now() <> statement_timestamp() AS open, current_setting('memorychat.user_id', true) AS user_id`,
        );
        expect(state[0]).toEqual({ open: false, user_id: '' });
      } finally {
        await debugPool.end();
      }
    });

    it('when a scoped statement or a transaction’s first statement fails, then it is rolled back and the connection serves the next scope', async () => {
      const scoped = scopedDatabase(pool);
      const user = scoped.asUser({ tenantId: 'default', userId: 'rls-user-2' });
      await expect(user.query('SELECT count(*) / 0 FROM turns')).rejects.toThrow(/division by zero/);
      await expect(
        user.transaction(async (tx) => {
          await tx.query('SELECT count(*) / 0 FROM turns');
        }),
      ).rejects.toThrow(/division by zero/);
      await expect(user.transaction(async () => 'no statement')).resolves.toBe('no statement');
      const other = scoped.asUser({ tenantId: 'default', userId: 'rls-user-3' });
      const { rows } = await other.query<{ n: number; user_id: string }>(
        `SELECT count(*)::int AS n, current_setting('memorychat.user_id') AS user_id FROM turns`,
      );
      expect(rows[0]).toEqual({ n: 4, user_id: 'rls-user-3' });
      const { rows: state } = await pool.query<{ open: boolean }>(`SELECT now() <> statement_timestamp() AS open`);
      expect(state[0]!.open).toBe(false);
    });
  });
});
