// `npm run bench:heavy-user`: /memoryChat for a user with a long history against a user with one turn,
// side by side in one run (docs/performance.md, "A user's own history"). The heavy user holds
// HEAVY_TURNS turns in HEAVY_SESSIONS live sessions (and some expired ones, which memory skips); both
// users ask a question and three follow-ups in a new session, alternating, through the real service
// on the embedded database. Options (env): BENCH_HEAVY_TURNS (2000), BENCH_HEAVY_SESSIONS (400),
// BENCH_HEAVY_ROUNDS (60: conversations per user).

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pgvector from 'pgvector';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { TENANT, userId } from './data.js';
import { openBenchDatabase } from './database.js';
import { serviceTurns, startService } from './service.js';
import { startInstantAnswerer } from './workload.js';

const HEAVY_TURNS = Number(process.env.BENCH_HEAVY_TURNS ?? 2000);
const HEAVY_SESSIONS = Number(process.env.BENCH_HEAVY_SESSIONS ?? 400);
const ROUNDS = Number(process.env.BENCH_HEAVY_ROUNDS ?? 60);
const HEAVY = 1;
const LIGHT = 2;
const MODEL = 'local-hash-v1@384';

const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-heavy-user-'));
const db = await openBenchDatabase(dir, true);
const perSession = Math.ceil(HEAVY_TURNS / HEAVY_SESSIONS);
const seed = async (user: number, sessions: number, turns: number, expiresIn: string) => {
  for (let s = 0; s < sessions; s++) {
    const sessionId = randomUUID();
    await db.pool.query(
      `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
       VALUES ($1, $2, $3, 'history', now(), now(), now() + $4::interval, $5, $5)`,
      [TENANT, userId(user), sessionId, expiresIn, turns],
    );
    await db.pool.query(
      `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, sql_query,
                          tables_used, vdp_database_names, embedding, embedding_model)
       SELECT $1, $2, $3, n, now(), 'ok', 'How many singers in region ' || ($4::int * 7 + n) % 50 || '?', 'Some',
              'SELECT count(*) FROM singer WHERE region = ' || n, ARRAY['singer'], ARRAY['db1'], $5::vector, $6
       FROM generate_series(1, $7::int) n`,
      [TENANT, userId(user), sessionId, s, pgvector.toSql(embedText(`singers in region ${s % 50}`, 384)!), MODEL, turns],
    );
  }
};
await seed(HEAVY, HEAVY_SESSIONS, perSession, '7 days');
await seed(HEAVY, Math.ceil(HEAVY_SESSIONS / 10), perSession, '-1 hour');
await seed(LIGHT, 1, 1, '7 days');
await db.close();

const answerer = await startInstantAnswerer();
// Both users ask back to back; the per-user rate limit is not what is measured.
const service = await startService(dir, answerer.url, { RATE_LIMIT_PER_MINUTE: '0' });
const client = serviceTurns(service.baseUrl, 1);
const latencies: Record<number, number[]> = { [HEAVY]: [], [LIGHT]: [] };
const questions = ['How many singers are there in region 3?', 'What about region 4?', 'And only those over 30?', 'Sorted by name?'];
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const user of round % 2 ? [HEAVY, LIGHT] : [LIGHT, HEAVY]) {
      let sessionId: string | undefined;
      for (const question of questions) {
        const started = performance.now();
        sessionId = await client.turn({ user, database: 'db1', question, sql: 'SELECT count(*) FROM singer', sessionId });
        // The first rounds warm both users' statements and caches.
        if (round >= 5) latencies[user]!.push(performance.now() - started);
      }
    }
  }
} finally {
  await client.close();
  await service.stop();
  answerer.server.close();
  await rm(dir, { recursive: true, force: true });
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!;
const heavy = latencies[HEAVY]!;
const light = latencies[LIGHT]!;
console.log(
  `heavy user: ${HEAVY_TURNS} turns in ${HEAVY_SESSIONS} live sessions (+${Math.ceil(HEAVY_SESSIONS / 10)} expired); light user: 1 turn`,
);
console.log(`heavy p50=${quantile(heavy, 0.5).toFixed(1)} ms p95=${quantile(heavy, 0.95).toFixed(1)} ms (n=${heavy.length})`);
console.log(`light p50=${quantile(light, 0.5).toFixed(1)} ms p95=${quantile(light, 0.95).toFixed(1)} ms (n=${light.length})`);
console.log(`heavy / light p50: ${(quantile(heavy, 0.5) / quantile(light, 0.5)).toFixed(2)}x (target <= 1.5x)`);
