import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { scopedDatabase } from '../../services/db/row-security.js';
import { droppedDatabasePool, SUPERUSER } from '../support/databases/postgres-server.js';
import { cachedPlanBytes, freshTestDatabase, type TestDatabase } from '../support/databases/test-database.js';
import { startFakeUpstream } from '../support/fakes/fake-upstream.js';
import { seedSession } from '../support/service/seed-memory.js';
import { startTestApp } from '../support/service/test-app.js';

const HOUR = 3_600_000;

/**
 * A coordinator that holds shards itself (`shouldhaveshards`, as on a single-node cluster): Citus runs
 * a statement on the coordinator's own shard locally, and there Citus 13.2.2 kept a new plan for every
 * run of a prepared statement's generic plan (docs/scaling.md#one-hop-per-statement). The service's
 * scope asks for custom plans on such a coordinator, and its connections stop growing.
 */
describe('a Citus coordinator that holds shards itself', () => {
  const cluster = inject('citusCluster');
  let testDatabase: TestDatabase;
  // One connection, the superuser's: the scope switches to memorychat_app for each statement, and
  // between them the same connection reads its own memory, which only a superuser may.
  let pool: pg.Pool;

  beforeAll(async () => {
    // The suite's migrated database, then one shard group moved from a worker onto the coordinator.
    testDatabase = await freshTestDatabase();
    pool = droppedDatabasePool({ ...cluster.coordinator, user: SUPERUSER, database: testDatabase.server!.database, max: 1 });
    const { coordinator } = cluster;
    await pool.query(`SELECT citus_set_node_property($1, $2, 'shouldhaveshards', true)`, [coordinator.host, coordinator.port]);
    const { rows } = await pool.query<{ shardid: string; nodename: string; nodeport: number }>(
      `SELECT shardid::text, nodename, nodeport FROM citus_shards WHERE table_name = 'sessions'::regclass ORDER BY shardid LIMIT 1`,
    );
    const { shardid, nodename, nodeport } = rows[0]!;
    await pool.query(`SELECT citus_move_shard_placement($1::bigint, $2, $3, $4, $5, shard_transfer_mode => 'block_writes')`, [
      shardid,
      nodename,
      nodeport,
      coordinator.host,
      coordinator.port,
    ]);
  });
  afterAll(async () => {
    await pool?.end();
    await testDatabase?.remove();
  });

  /** A user of the default tenant whose shards are on the node at `port`. */
  const userOn = async (port: number, prefix: string) =>
    (
      await pool.query<{ user_id: string }>(
        `SELECT $2 || i AS user_id FROM generate_series(1, 200) i
         WHERE (SELECT nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('turns', $2 || i)) = $1
         LIMIT 1`,
        [port, prefix],
      )
    ).rows[0]!.user_id;

  it('when users whose shards are on the coordinator and on a worker ask and follow up, then the service answers both from their memory', async () => {
    const upstream = await startFakeUpstream();
    const t = await startTestApp({ ANSWER_URL: upstream.answerUrl }, { testDatabase, keepTestDatabase: true });
    try {
      for (const user of [
        await userOn(cluster.coordinator.port, 'coordinator-user-'),
        await userOn(cluster.workers[0]!.port, 'worker-user-'),
      ]) {
        const token = t.token(user);
        const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Show me total sales by region for 2024' } });
        expect(first.status, JSON.stringify(first.body)).toBe(200);
        const followUp = await t.request('POST', '/memoryChat', {
          token,
          body: { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id },
        });
        expect(followUp.status, JSON.stringify(followUp.body)).toBe(200);
        expect(followUp.body.memory_context_used.history_turns, user).toEqual([1]);
      }
    } finally {
      await t.close();
      await upstream.close();
    }
  });

  it('when a user whose shard is on the coordinator is read again and again, then the statement runs with custom plans and the connection’s cached plans stop growing', async () => {
    const userId = await userOn(cluster.coordinator.port, 'local-user-');
    await seedSession(pool, { userId, turns: 3, expiresAt: new Date(Date.now() + HOUR) });
    const scoped = scopedDatabase(pool).asUser({ tenantId: 'default', userId });
    const read = {
      name: 'mc_test_read_on_local_shard',
      text: 'SELECT count(*)::int AS n FROM turns WHERE tenant_id = $1 AND user_id = $2',
      values: ['default', userId],
    };
    const readTimes = async (times: number) => {
      for (let i = 0; i < times; i++) expect((await scoped.query<{ n: number }>(read)).rows[0]!.n).toBe(3);
    };

    await readTimes(10);
    const warm = await cachedPlanBytes(pool);
    await readTimes(40);
    // With generic plans every run kept a plan of its own: about 80 KB each.
    expect((await cachedPlanBytes(pool)) - warm, 'cached plans after 40 more reads').toBeLessThan(64 * 1024);
    const { rows: prepared } = await pool.query<{ generic: number; custom: number }>(
      'SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = $1',
      [read.name],
    );
    expect(prepared).toEqual([{ generic: 0, custom: 50 }]);
    expect((await scoped.query<{ mode: string }>(`SELECT current_setting('plan_cache_mode') AS mode`)).rows[0]!.mode).toBe(
      'force_custom_plan',
    );
  });
});
