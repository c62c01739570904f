import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../services/db/migrate.js';
import { CITUS_SUPERUSER, type CitusCluster, startCitusCluster } from '../support/databases/citus-cluster.js';
import { startFakeUpstream } from '../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

/** Bounded traffic: clients, each asking up to this many questions, and no longer than this. */
const CLIENTS = 6;
const QUESTIONS_EACH = 60;
const TRAFFIC_MS = 90_000;
/**
 * The longest run of failing requests a client may see: 0 ms measured (no request failed; logical
 * replication lets writes go on during a shard's copy); the bound leaves room for a shard's final
 * switch-over on a slower machine (docs/scaling.md#rebalancing).
 */
const LONGEST_FAILURE_BOUND_MS = 5_000;

/**
 * Rebalance without loss (docs/scaling.md#rebalancing): /memoryChat traffic runs while a third worker
 * joins and citus_rebalance_start moves shards to it (logical replication: writes go on during the
 * copy). Then every acknowledged turn is stored exactly once, and each user's memory is complete.
 * A cluster of the test's own: the project's cluster must not change under the other files.
 */
describe('rebalancing a Citus cluster under /memoryChat traffic', () => {
  let cluster: CitusCluster;
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let t: TestApp;
  let admin: pg.Pool;
  let dataDir: string;
  const database = 'rebalance';
  const login = 'mc_rebalance';

  beforeAll(async () => {
    cluster = await startCitusCluster();
    await cluster.createLogin(login, 'LOGIN CREATEROLE');
    await cluster.createDatabase(database, login);
    const pool = new pg.Pool({ ...cluster.coordinator, user: login, database, max: 1 });
    await migrate(pool);
    await pool.end();
    admin = new pg.Pool({ ...cluster.coordinator, user: CITUS_SUPERUSER, database, max: 2 });
    upstream = await startFakeUpstream();
    dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-rebalance-'));
    t = await startTestApp(
      { ANSWER_URL: upstream.answerUrl },
      {
        testDatabase: {
          env: {
            DATA_DIR: dataDir,
            DATABASE_URL: `postgres://${login}@${cluster.coordinator.host}:${cluster.coordinator.port}/${database}`,
            DATABASE_POOL_MAX: '10',
          },
          remove: () => rm(dataDir, { recursive: true, force: true }),
        },
      },
    );
  }, 180_000);
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
    await admin?.end();
    await cluster?.stop();
  });

  it('when a worker is added and the shards rebalanced during traffic, then acknowledged = stored, none lost or duplicated, each memory complete', async () => {
    const acknowledged = new Map<string, { session: string; turn: number }[]>();
    const failures: { client: number; from: number; to: number }[] = [];
    const started = Date.now();
    let rebalanced = false;

    const client = async (c: number) => {
      const user = `rebalance-user-${c}`;
      const token = t.token(user);
      const turns: { session: string; turn: number }[] = [];
      acknowledged.set(user, turns);
      let session: string | undefined;
      let failingSince: number | undefined;
      for (let q = 0; q < QUESTIONS_EACH && Date.now() - started < TRAFFIC_MS; q++) {
        const at = Date.now();
        const reply = await t
          .request('POST', '/memoryChat', {
            token,
            body: { question: `Sales by region for ${2000 + q}?`, ...(session ? { session_id: session } : {}) },
          })
          .catch(() => undefined);
        if (reply?.status === 200) {
          session = reply.body.conversation_metadata.conversation_id;
          turns.push({ session: session!, turn: reply.body.conversation_metadata.message_count });
          if (failingSince !== undefined) failures.push({ client: c, from: failingSince, to: Date.now() });
          failingSince = undefined;
        } else {
          failingSince ??= at;
        }
        // Keep asking until the rebalance is over, so the traffic covers it whole.
        if (rebalanced && q >= QUESTIONS_EACH / 2) break;
      }
      if (failingSince !== undefined) failures.push({ client: c, from: failingSince, to: Date.now() });
    };

    const rebalance = async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const worker = await cluster.startWorker();
      // The login and the database, as on the other nodes; citus_add_node copies the service's roles,
      // the metadata and the reference tables.
      await cluster.asSuperuser(worker, 'postgres', async (c) => {
        await c.query(`CREATE ROLE ${login} LOGIN CREATEROLE`);
        await c.query(`CREATE DATABASE ${database} OWNER ${login}`);
      });
      await cluster.asSuperuser(worker, database, async (c) => {
        await c.query('CREATE EXTENSION citus; CREATE EXTENSION vector');
        await c.query(`UPDATE pg_extension SET extowner = $1::regrole WHERE extname = 'vector'`, [login]);
      });
      await admin.query('SELECT citus_add_node($1, $2)', [worker.host, worker.port]);
      const moveStarted = Date.now();
      await admin.query('SELECT citus_rebalance_start()');
      await admin.query('SELECT citus_rebalance_wait()');
      rebalanced = true;
      const { rows } = await admin.query<{ nodes: number; on_new: number }>(
        `SELECT count(DISTINCT nodeport)::int AS nodes, count(*) FILTER (WHERE nodeport = $1)::int AS on_new
         FROM citus_shards WHERE table_name = 'turns'::regclass`,
        [worker.port],
      );
      return { ...rows[0]!, ms: Date.now() - moveStarted };
    };

    const [moved] = await Promise.all([rebalance(), ...Array.from({ length: CLIENTS }, (_, c) => client(c))]);
    expect(moved.nodes).toBe(3);
    expect(moved.on_new).toBeGreaterThan(0);

    const { rows: stored } = await admin.query<{ user_id: string; session_id: string; turn_number: number }>(
      `SELECT user_id, session_id::text, turn_number FROM turns WHERE user_id LIKE 'rebalance-user-%'`,
    );
    const key = (user: string, session: string, turn: number) => `${user}/${session}/${turn}`;
    const storedKeys = stored.map((r) => key(r.user_id, r.session_id, r.turn_number));
    const ackKeys = [...acknowledged].flatMap(([user, turns]) => turns.map((a) => key(user, a.session, a.turn)));
    const lost = ackKeys.filter((k) => !storedKeys.includes(k)).length;
    const duplicated = storedKeys.length - new Set(storedKeys).size;
    const longest = Math.max(0, ...failures.map((f) => f.to - f.from));
    console.log(
      `rebalance: moved ${moved.on_new} of the turns shards to the new worker in ${moved.ms} ms; ` +
        `acknowledged=${ackKeys.length}, stored=${storedKeys.length}, lost=${lost}, duplicated=${duplicated}, longest failure=${longest} ms`,
    );
    expect(ackKeys.length).toBeGreaterThan(CLIENTS * 10);
    expect({ lost, duplicated, stored: storedKeys.length }).toEqual({ lost: 0, duplicated: 0, stored: ackKeys.length });
    // Each user's memory is complete: its session holds every acknowledged turn, numbered without gap.
    for (const [user, turns] of acknowledged) {
      const numbers = stored
        .filter((r) => r.user_id === user)
        .map((r) => r.turn_number)
        .sort((a, b) => a - b);
      expect(numbers, user).toEqual(turns.map((_, i) => i + 1));
    }
    expect(longest).toBeLessThanOrEqual(LONGEST_FAILURE_BOUND_MS);
  }, 240_000);
});
