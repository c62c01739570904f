import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrate } from '../../services/db/migrate.js';
import { asSuperuser, type TestDatabase } from '../support/databases/test-database.js';
import { sendJson } from '../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply, startFakeUpstream } from '../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

const REPO = new URL('../../', import.meta.url);
const FILES = [
  'services/db/migrations/016_citus_distribution.sql',
  'scripts/citus/distribute-later-tables.sql',
  'scripts/citus/distribute-functions.sql',
];
const QUESTION = 'Show me total sales by region for 2024';

/**
 * Moving a database that ran on one server to Citus, the way docs/scaling.md#moving-to-citus says (a,
 * in one transaction per file): a database migrated and used without citus on the cluster's
 * coordinator (a user's turn, a verified pair promoted from it, another user's feedback on an answer
 * that used it), then citus and the workers, 016's file, distribute-later-tables.sql and
 * distribute-functions.sql as the tables' owner. After it the service answers from the memory stored
 * before, every table of the service is Citus's, and the pair and its feedback came along.
 */
describe('moving a database that ran on one server to Citus (docs/scaling.md)', () => {
  const server = inject('serverDatabase');
  const cluster = inject('citusCluster');
  const nodes = [cluster.coordinator, ...cluster.workers];
  const database = `${server.login}_moved_${randomBytes(4).toString('hex')}`;
  let dataDir: string;
  let upstream: FakeUpstream;
  let t: TestApp | undefined;

  const testDatabase = (): TestDatabase => ({
    env: {
      DATA_DIR: dataDir,
      DATABASE_URL: `postgres://${server.login}@${cluster.coordinator.host}:${cluster.coordinator.port}/${database}`,
      DATABASE_POOL_MAX: '10',
    },
    server: { database, user: server.login },
    remove: async () => {},
  });
  const startService = () =>
    startTestApp({ ANSWER_URL: upstream.answerUrl, JWT_DATABASES_CLAIM: 'dbs' }, { testDatabase: testDatabase(), keepTestDatabase: true });
  const ask = async (app: TestApp, user: string, body: Record<string, unknown>) => {
    const res = await app.request('POST', '/memoryChat', { token: app.token(user, { tenant: 'acme' }), body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-test-'));
    upstream = await startFakeUpstream();
    upstream.handle((req, res) => {
      sendJson(res, 200, { ...salesReply(String(req.body?.question ?? ''), ''), tables_used: ['salesdb.sales'] });
    });
    // As on a single server: the database, pgvector created by the superuser, the login migrating it.
    for (const node of nodes) await asSuperuser('postgres', (c) => c.query(`CREATE DATABASE ${database} OWNER ${server.login}`), node);
    await asSuperuser(
      database,
      async (c) => {
        await c.query('CREATE EXTENSION vector');
        await c.query(`UPDATE pg_extension SET extowner = $1::regrole WHERE extname = 'vector'`, [server.login]);
      },
      cluster.coordinator,
    );
    const owner = new pg.Pool({ ...cluster.coordinator, user: server.login, database, max: 1 });
    try {
      await migrate(owner);
    } finally {
      await owner.end();
    }
  });
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
    for (const node of nodes)
      await asSuperuser('postgres', (c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`), node).catch(() => {});
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('when a used database is moved by the documented steps, then the service answers from the memory stored before, and the verified pair and its feedback came along', async () => {
    // Before: one server. Alice's turn, promoted as the tenant's pair; Gina's answer used it and she rated it down.
    const before = await startService();
    let aliceSession: string;
    let pairId: string;
    try {
      const alice = await ask(before, 'alice', { question: QUESTION, vdp_database_names: 'salesdb' });
      aliceSession = alice.conversation_metadata.conversation_id;
      const admin = before.token('acme-admin', { tenant: 'acme', roles: ['memory-admin'] });
      const promoted = await before.request('POST', '/admin/verified-pairs', {
        token: admin,
        body: { user_id: 'alice', session_id: aliceSession, turn_number: 1 },
      });
      expect(promoted.status, JSON.stringify(promoted.body)).toBe(201);
      pairId = promoted.body.pair.pair_id;
      const gina = await ask(before, 'gina', { question: 'Total sales by region in 2024?', vdp_database_names: 'salesdb' });
      const rated = await before.request('POST', `/sessions/${gina.conversation_metadata.conversation_id}/turns/1/feedback`, {
        token: before.token('gina', { tenant: 'acme' }),
        body: { rating: 'down' },
      });
      expect(rated.status).toBe(200);
    } finally {
      await before.close();
    }

    // The move: citus and the workers, then the files as the tables' owner.
    for (const worker of cluster.workers)
      await asSuperuser(
        database,
        async (c) => {
          await c.query('CREATE EXTENSION citus; CREATE EXTENSION vector');
          await c.query(`UPDATE pg_extension SET extowner = $1::regrole WHERE extname = 'vector'`, [server.login]);
        },
        worker,
      );
    await asSuperuser(
      database,
      async (c) => {
        await c.query('CREATE EXTENSION citus');
        await c.query('SELECT citus_set_coordinator_host($1, $2)', [cluster.coordinator.host, cluster.coordinator.port]);
        for (const worker of cluster.workers) await c.query('SELECT citus_add_node($1, $2)', [worker.host, worker.port]);
      },
      cluster.coordinator,
    );
    const owner = new pg.Client({ ...cluster.coordinator, user: server.login, database });
    await owner.connect();
    try {
      for (const file of FILES) await owner.query(await readFile(new URL(file, REPO), 'utf8'));
    } finally {
      await owner.end();
    }

    t = await startService();
    const { rows: local } = await t.admin.query<{ table: string }>(
      `SELECT c.relname AS table FROM pg_class c
       WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND c.relname NOT IN ('migrations', 'schema_migrations')
         AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid)`,
    );
    expect(local, 'tables left out of Citus').toEqual([]);
    const { rows: keys } = await t.admin.query<{ to: string; valid: boolean }>(
      `SELECT confrelid::regclass::text AS to, convalidated AS valid FROM pg_constraint
       WHERE conrelid = 'verified_pair_feedback'::regclass AND contype = 'f' ORDER BY 1`,
    );
    expect(keys).toEqual([
      { to: 'turns', valid: true },
      { to: 'verified_pairs', valid: true },
    ]);

    // Alice's follow-up carries her turn stored before the move; Bob, new, gets the pair.
    const followUp = await ask(t, 'alice', { question: 'What about 2023?', session_id: aliceSession, vdp_database_names: 'salesdb' });
    expect(followUp.memory_context_used.history_turns).toEqual([1]);
    const bob = await ask(t, 'bob', { question: 'Total sales by region in 2024?', vdp_database_names: 'salesdb' });
    expect((bob.memory_context_used.verified_pairs ?? []).map((p: { pair_id: string }) => p.pair_id)).toEqual([pairId]);
    const listed = await t.request('GET', '/admin/verified-pairs', {
      token: t.token('acme-admin', { tenant: 'acme', roles: ['memory-admin'] }),
    });
    expect(listed.body.verified_pairs.find((p: { pair_id: string }) => p.pair_id === pairId)?.negative_feedback).toBe(1);
    // The turns went to the user's worker as calls (migrations 024, 026, 028), not through the coordinator.
    const { rows: delegated } = await t.admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_dist_object
       WHERE classid = 'pg_proc'::regclass AND distribution_argument_index IS NOT NULL
         AND objid IN ('memorychat_on_user_shard(text,text,text,text,text,text,text[],integer,vector)'::regprocedure,
                       'memorychat_append_on_user_shard(text,text,text,text,text,text[],text,text,text[],integer,vector,text,text,text[])'::regprocedure)`,
    );
    expect(delegated[0]!.n).toBe(2);
  });
});
