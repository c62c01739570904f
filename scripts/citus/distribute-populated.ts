// Moving a populated single-server database to Citus (docs/scaling.md#moving-to-citus), measured:
// a database migrated as a single server (every migration but Citus's distribution), seeded with
// `--turns` turns (the size of a real one: 384-d vectors, search terms, a stored result), then the
// citus extension created, the workers added and the distribution migration applied, while a writer
// appends turns every 50 ms. Prints the time of each step and the writer's longest wait.
//
//   node --import tsx scripts/citus/distribute-populated.ts [--turns 1000000] [--users 1000]
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../../services/db/migrate.js';
import { startCitusCluster } from '../../test/support/databases/citus-cluster.js';

const { values: args } = parseArgs({
  options: { turns: { type: 'string', default: '1000000' }, users: { type: 'string', default: '1000' } },
});
const TURNS = Number(args.turns);
const USERS = Number(args.users);
const DISTRIBUTION = '016_citus_distribution.sql';
const MIGRATIONS = fileURLToPath(new URL('../../services/db/migrations/', import.meta.url));

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const cluster = await startCitusCluster();
const singleServerMigrations = await mkdtemp(path.join(tmpdir(), 'memorychat-migrations-'));
try {
  const login = 'mc_distribute';
  await cluster.createLogin(login, 'LOGIN CREATEROLE');
  // The single server: pgvector only, on the coordinator; the workers get citus and pgvector later.
  await cluster.asSuperuser(cluster.coordinator, 'postgres', (c) => c.query(`CREATE DATABASE seeded OWNER ${login}`));
  await cluster.asSuperuser(cluster.coordinator, 'seeded', async (c) => {
    await c.query('CREATE EXTENSION vector');
    await c.query(`UPDATE pg_extension SET extowner = '${login}'::regrole WHERE extname = 'vector'`);
  });
  for (const file of await readdir(MIGRATIONS))
    if (file < DISTRIBUTION) await cp(path.join(MIGRATIONS, file), path.join(singleServerMigrations, file));
  const pool = new pg.Pool({ ...cluster.coordinator, user: login, database: 'seeded', max: 2 });
  pool.on('error', () => {});
  await migrate(pool, () => {}, singleServerMigrations);

  const admin = new pg.Pool({ ...cluster.coordinator, user: 'postgres', database: 'seeded', max: 1 });
  admin.on('error', () => {});
  let started = performance.now();
  await admin.query(
    `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
     SELECT 'default', 'user-' || u, md5(u::text)::uuid, 'seeded', now(), now(), now() + interval '30 days', $1, $1
     FROM generate_series(1, $2) u`,
    [Math.ceil(TURNS / USERS), USERS],
  );
  const vector = `[${Array.from({ length: 384 }, (_, i) => (Math.sin(i) / 14).toFixed(4)).join(',')}]`;
  const perStep = 50_000;
  for (let from = 0; from < TURNS; from += perStep) {
    await admin.query(
      `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, sql_query,
                          embedding, embedding_model, search_terms, execution_result)
       SELECT 'default', 'user-' || (g % $3 + 1), md5((g % $3 + 1)::text)::uuid, g / $3 + 1, now(), 'ok',
              'Show me total sales by region for ' || (2000 + g % 25), 'Sales by region.',
              'SELECT region, SUM(amount) FROM sales WHERE year = ' || (2000 + g % 25) || ' GROUP BY region',
              $4::vector, 'local-hash-v2@384', to_tsvector('simple', 'sales region ' || g % 25),
              '{"columns":["region","sum"],"rows":[["north",1200],["south",900]]}'::jsonb
       FROM generate_series($1::int, $2::int) g`,
      [from, Math.min(from + perStep, TURNS) - 1, USERS, vector],
    );
  }
  const { rows: size } = await admin.query(`SELECT pg_size_pretty(pg_total_relation_size('turns')) AS turns`);
  console.log(`seeded ${TURNS} turns of ${USERS} users (turns: ${size[0].turns}) in ${seconds(performance.now() - started)}`);

  // What the operator runs: citus on every node, the workers added, then the next migration.
  started = performance.now();
  for (const worker of cluster.workers) {
    await cluster.asSuperuser(worker, 'postgres', (c) => c.query(`CREATE DATABASE seeded OWNER ${login}`));
    await cluster.asSuperuser(worker, 'seeded', async (c) => {
      await c.query('CREATE EXTENSION citus; CREATE EXTENSION vector');
      await c.query(`UPDATE pg_extension SET extowner = '${login}'::regrole WHERE extname = 'vector'`);
    });
  }
  await admin.query('CREATE EXTENSION citus');
  await admin.query('SELECT citus_set_coordinator_host($1, $2)', [cluster.coordinator.host, cluster.coordinator.port]);
  for (const worker of cluster.workers) await admin.query('SELECT citus_add_node($1, $2)', [worker.host, worker.port]);
  console.log(`citus created and ${cluster.workers.length} workers added in ${seconds(performance.now() - started)}`);

  // A writer appending a turn to one user's session every 50 ms meanwhile; its longest wait is what
  // a request would have waited.
  let writing = true;
  let longest = 0;
  let written = 0;
  const failed: string[] = [];
  const writer = (async () => {
    const client = new pg.Client({ ...cluster.coordinator, user: 'postgres', database: 'seeded' });
    await client.connect();
    let n = TURNS;
    while (writing) {
      const t0 = performance.now();
      try {
        await client.query(
          `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer)
           VALUES ('default', 'user-1', md5('1')::uuid, $1, now(), 'ok', 'q', 'a')`,
          [++n],
        );
        written += 1;
      } catch (err) {
        failed.push((err as Error).message);
      }
      longest = Math.max(longest, performance.now() - t0);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await client.end();
  })();
  started = performance.now();
  await migrate(pool, (line) => console.log(line)).catch((err: Error) => {
    console.error(err.message);
    throw err;
  });
  const distributed = performance.now() - started;
  writing = false;
  await writer;
  console.log(
    `distribution migration: ${seconds(distributed)}; writer: ${written} turns written, ${failed.length} failed ` +
      `(${[...new Set(failed)].join('; ') || 'none'}), longest wait ${seconds(longest)}`,
  );
  const { rows: shards } = await admin.query(
    `SELECT nodeport, count(*)::int AS shards, pg_size_pretty(sum(shard_size)) AS size FROM citus_shards
     WHERE table_name = 'turns'::regclass GROUP BY nodeport ORDER BY nodeport`,
  );
  console.log('turns shards per worker:', shards);
  await admin.end();
  await pool.end();
} finally {
  await cluster.stop();
  await rm(singleServerMigrations, { recursive: true, force: true });
}
