// Cleanup throughput on the embedded Postgres: inserts N expired turns (plus live ones that must
// survive), runs the retention cleanup as the job does, and prints rows deleted per second.
//   npm run bench -- cleanup [turns=100000] [turnsPerSession=50] [batch=1000]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pgvector from 'pgvector';
import { runRetentionCleanup } from '../../services/core/jobs/retention-cleanup.js';
import { migrate } from '../../services/db/migrate.js';
import { openDatabase } from '../../services/db/pool.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { DIMENSIONS, EMBEDDING_MODEL } from './seed.js';

const [turns = 100_000, perSession = 50, batchSize = 1000] = process.argv.slice(2).map(Number);
const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-bench-'));
const database = await openDatabase({ DATA_DIR: dir, DATABASE_POOL_MAX: 1 });
try {
  await migrate(database.pool);
  const db = database.pool;
  const sessions = Math.ceil(turns / perSession);
  const vector = pgvector.toSql(embedText('total sales by region for 2024', DIMENSIONS)!);
  const insertStarted = performance.now();
  // Expired sessions over 100 users, then 10% as many live ones, with realistic turn rows (384-d vectors inline).
  for (const [expired, count] of [
    [true, sessions],
    [false, Math.ceil(sessions / 10)],
  ] as const) {
    await db.query(
      `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
       SELECT 'bench', 'user-' || (s % 100), gen_random_uuid(), 'bench', now(), now(),
              now() + CASE WHEN $1 THEN interval '-1 hour' ELSE interval '1 hour' END, $2, $2
       FROM generate_series(1, $3::integer) s`,
      [expired, perSession, count],
    );
  }
  await db.query(
    `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, sql_query,
                        tables_used, embedding, embedding_model)
     SELECT s.tenant_id, s.user_id, s.session_id, n, now(), 'ok', 'What were total sales by region in ' || n,
            'EMEA 100, AMER 200', 'SELECT region, SUM(amount) FROM sales GROUP BY region', ARRAY['sales'], $1::vector, $3
     FROM sessions s CROSS JOIN generate_series(1, $2::integer) n`,
    [vector, perSession, EMBEDDING_MODEL],
  );
  const { rows } = await db.query<{ expired: number; live: number }>(
    `SELECT count(*) FILTER (WHERE s.expires_at <= now())::int AS expired, count(*) FILTER (WHERE s.expires_at > now())::int AS live
     FROM turns t JOIN sessions s USING (tenant_id, user_id, session_id)`,
  );
  console.log(
    `inserted ${rows[0]!.expired} expired and ${rows[0]!.live} live turns in ${Math.round(performance.now() - insertStarted)} ms`,
  );
  await db.query('ANALYZE');

  const logs: string[] = [];
  const result = await runRetentionCleanup({
    db: database.scoped,
    clock: () => new Date(),
    batchSize,
    accessAuditRetentionMs: 400 * 86_400_000,
    log: { info: (_o, msg) => void logs.push(msg), warn: () => {}, error: () => {} },
  });
  const left = await db.query<{ turns: number }>('SELECT count(*)::int AS turns FROM turns');
  const rowsDeleted = result.turns + result.sessions;
  console.log(
    JSON.stringify({
      ...result,
      batchSize,
      liveTurnsLeft: left.rows[0]!.turns,
      rowsPerSecond: Math.round(rowsDeleted / (result.ms / 1000)),
      turnsPerSecond: Math.round(result.turns / (result.ms / 1000)),
    }),
  );
} finally {
  await database.close();
  await rm(dir, { recursive: true, force: true });
}
