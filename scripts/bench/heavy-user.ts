// `npm run bench -- heavy-user [--server]`: memory for users with a long history (docs/performance.md,
// "A user's own history"). For each size (turns in live sessions, plus a tenth as many expired
// sessions, which memory skips), on the embedded database or with --server on the PostgreSQL server:
//   - the retrieval statement alone (session + window + top-3 search, under the user's scope) for the
//     heavy user: p50/p95 over --search-calls calls, and the rows its plan examines per stored turn;
//   - /memory/search's statement (k 5, no floor) for the heavy user, p50/p95 over as many calls, and its p50 for the light user;
//   - /memoryChat through the real compiled service for the heavy user against a user with one turn,
//     a question and three follow-ups in a new session each, alternating, side by side.
// Options: --sizes 2000x400,5000x1000 (turns x sessions), --rounds 40 (conversations per user),
// --search-calls 300, --server; --keep leaves each size's database (server: <prefix>_<turns>x<sessions>;
// embedded: a data directory of that name under the temp dir) seeded and indexed, and a later run
// with --keep reuses it instead of seeding again; --prefix names them (default mc_bench_heavy);
// --shared-buffers-mb N runs the embedded database (the bench's and the service's) with
// EMBEDDED_SHARED_BUFFERS_MB=N.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import pgvector from 'pgvector';
import { questionSearch, turnSearchTerms } from '../../services/core/search-terms/lexical-terms.js';
import { type RetrievalRequest, retrieveMemory } from '../../services/db/repositories/memory-retrieval.js';
import { searchTurns } from '../../services/db/repositories/turns.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { distinctTurn, interactionsFor, rng, TENANT, userDatabases, userId } from './data.js';
import { openBenchDatabase } from './database.js';
import { percentile } from './load.js';
import { explainRetrieval } from './retrieval-plan.js';
import { DIMENSIONS, EMBEDDING_MODEL } from './seed.js';
import { recallAgainstExact } from './served-recall.js';
import { databaseExists, databaseUrl, dropDatabase, openServerDatabase, recreateDatabase } from './server-databases.js';
import { serviceTurns, startService } from './service.js';
import { startInstantAnswerer } from './workload.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '2000x400,5000x1000' },
    rounds: { type: 'string', default: '40' },
    'search-calls': { type: 'string', default: '300' },
    server: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    prefix: { type: 'string', default: 'mc_bench_heavy' },
    'recall-queries': { type: 'string', default: '200' },
    'shared-buffers-mb': { type: 'string' },
  },
});
const sharedBuffersMb = args['shared-buffers-mb'] ? Number(args['shared-buffers-mb']) : undefined;
const HEAVY = 1;
const LIGHT = 2;
const ANN_INDEX = 'turns_ann_local_hash_v2_384';
const QUESTIONS = ['How many singers are there in region 3?', 'What about region 4?', 'And only those over 30?', 'Sorted by name?'];

/**
 * The heavy user's topics: the singers the bench's questions ask about, and the user's own SParC
 * databases. Their scope names one data source, db1, as the questions do.
 */
const HEAVY_TOPICS = ['singer', 'concert_singer', ...userDatabases(HEAVY)];

/** Every seeded turn's embedded text: no two turns share one. */
const seen = new Set<string>();

/**
 * `sessions` sessions of `turns` turns each for `user`: SParC turns of `topics`, each varied
 * (turnVariant; no two alike) and embedded with its SQL and answer as the service embeds a turn.
 */
async function seedUser(pool: pg.Pool, user: number, topics: string[], sessions: number, turns: number, expiresIn: string) {
  const ids: string[] = [];
  const mine = interactionsFor(topics).flatMap((i) => i.turns);
  const random = rng(97 + user + sessions * 13 + (expiresIn.startsWith('-') ? 1 : 0));
  for (let s = 0; s < sessions; s++) {
    const sessionId = randomUUID();
    ids.push(sessionId);
    await pool.query(
      `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
       VALUES ($1, $2, $3, 'history', now(), now(), now() + $4::interval, $5, $5)`,
      [TENANT, userId(user), sessionId, expiresIn, turns],
    );
    const rows = Array.from({ length: turns }, () => distinctTurn(random, mine, seen));
    // In the approximate index (migration 017), as a heavy user's appends leave their turns.
    await pool.query(
      `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, sql_query,
                          tables_used, vdp_database_names, embedding, embedding_model, search_terms, ann_indexed)
       SELECT $1, $2, $3, r.n, now(), 'ok', r.q, r.a, r.sql, r.tables::text[], ARRAY['db1'], r.v::vector, $4, r.terms::tsvector, true
       FROM unnest($5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[]) AS r(n, q, a, sql, tables, v, terms)`,
      [
        TENANT,
        userId(user),
        sessionId,
        EMBEDDING_MODEL,
        rows.map((_, i) => i + 1),
        rows.map((r) => r.question),
        rows.map((r) => r.answer.answer),
        rows.map((r) => r.sql),
        rows.map((r) => `{${r.answer.tables_used.join(',')}}`),
        rows.map((r) => pgvector.toSql(embedText(r.text, DIMENSIONS)!)),
        rows.map((r) => turnSearchTerms({ question: r.question, sqlQuery: r.sql, tablesUsed: r.answer.tables_used })),
      ],
    );
  }
  return ids;
}
/** The heavy user's live and expired sessions and the light user's turn, the approximate index dropped meanwhile. */
async function seed(db: Awaited<ReturnType<typeof openBenchDatabase>>, sessions: number, perSession: number): Promise<string[]> {
  await db.pool.query(`DROP INDEX ${ANN_INDEX}`);
  const heavySessions = await seedUser(db.pool, HEAVY, HEAVY_TOPICS, sessions, perSession, '7 days');
  await seedUser(db.pool, HEAVY, HEAVY_TOPICS, Math.ceil(sessions / 10), perSession, '-1 hour');
  await seedUser(db.pool, LIGHT, userDatabases(LIGHT), 1, 1, '7 days');
  if (args.server) await db.pool.query('ANALYZE sessions; ANALYZE turns');
  return heavySessions;
}

/** The approximate index as the retention cleanup's upkeep leaves it (db/ann-index-upkeep.ts): built with √rows lists. */
async function upkeep(db: Awaited<ReturnType<typeof openBenchDatabase>>): Promise<void> {
  const started = performance.now();
  const state = (await db.scoped.maintainAnnIndexes()).find((s) => s.index === ANN_INDEX)!;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (state.rebuiltWith !== undefined)
    console.error(`[heavy-user] ${ANN_INDEX} built with ${state.rebuiltWith} lists for ${state.rows} rows in ${seconds} s`);
  else console.error(`[heavy-user] ${ANN_INDEX}: ${state.lists} lists for ${state.rows} rows, in step`);
}

async function measureSize(turns: number, sessions: number) {
  const name = `${args.prefix}_${turns}x${sessions}`;
  const kept = args.keep ? path.join(tmpdir(), name) : undefined;
  const dataDir = kept ?? (await mkdtemp(path.join(tmpdir(), 'memorychat-heavy-user-')));
  if (args.server && !(args.keep && (await databaseExists(name)))) await recreateDatabase(name);
  let db = args.server ? await openServerDatabase(name, 1, true) : await openBenchDatabase(dataDir, true, sharedBuffersMb);
  const perSession = Math.ceil(turns / sessions);
  // A kept database gains each run's /memoryChat conversations (the seed names its sessions 'history'):
  // they go before it is measured again, so that it holds the size it is named for.
  const added = `SELECT session_id FROM sessions WHERE tenant_id = $1 AND user_id = ANY($2) AND session_name <> 'history'`;
  const users = [userId(HEAVY), userId(LIGHT)];
  await db.pool.query(`DELETE FROM turns WHERE tenant_id = $1 AND user_id = ANY($2) AND session_id IN (${added})`, [TENANT, users]);
  await db.pool.query(`DELETE FROM sessions WHERE session_id IN (${added})`, [TENANT, users]);
  const { rows: heavySessionRows } = await db.pool.query<{ session_id: string }>(
    'SELECT session_id FROM sessions WHERE user_id = $1 AND expires_at > now() ORDER BY session_id',
    [userId(HEAVY)],
  );
  const reuse = args.keep && heavySessionRows.length > 0;
  const heavySessions = reuse ? heavySessionRows.map((r) => r.session_id) : await seed(db, sessions, perSession);
  if (reuse) console.error(`[heavy-user] reusing ${name}: ${heavySessions.length} live sessions of the heavy user`);
  await upkeep(db);
  if (!args.server && !reuse) {
    // Measured on the data as a service that opens it finds it: in the engine that loaded it, the
    // retrieval took 127 ms at 20,000 turns, against 8.8 in a later run on the same data.
    await db.close();
    db = await openBenchDatabase(dataDir, false, sharedBuffersMb);
  }

  // The statement alone, as the service runs it (scoped), for a new question and for a follow-up.
  const identity = { tenantId: TENANT, userId: userId(HEAVY), roles: [] };
  const request = (i: number): RetrievalRequest => ({
    identity,
    sessionId: i % 2 ? heavySessions[i % heavySessions.length] : undefined,
    now: new Date(),
    windowSize: 10,
    k: 3,
    minSimilarity: 0.25,
    embedding: embedText(`How many singers are there in region ${i % 60}?`, DIMENSIONS),
    embeddingModel: EMBEDDING_MODEL,
    search: questionSearch(`How many singers are there in region ${i % 60}?`),
    scope: { requested: ['db1'] },
  });
  const scoped = db.scoped.asUser(identity);
  for (let i = 0; i < 30; i++) await retrieveMemory(scoped, request(i));
  const searchMs: number[] = [];
  for (let i = 0; i < Number(args['search-calls']); i++) {
    const started = performance.now();
    await retrieveMemory(scoped, request(i));
    searchMs.push(performance.now() - started);
  }
  // /memory/search's statement, as the route runs it (k 5, no floor), for the heavy and the light user alternately.
  const apiSearchMs: Record<number, number[]> = { [HEAVY]: [], [LIGHT]: [] };
  for (let i = 0; i < Number(args['search-calls']); i++) {
    const { now, embedding, search } = request(i);
    for (const user of i % 2 ? [HEAVY, LIGHT] : [LIGHT, HEAVY]) {
      const searcher = { tenantId: TENANT, userId: userId(user), roles: [] };
      const started = performance.now();
      await searchTurns(db.scoped.asUser(searcher), {
        identity: searcher,
        now,
        embedding: embedding!,
        embeddingModel: EMBEDDING_MODEL,
        k: 5,
        minSimilarity: -1,
        search: search ?? null,
        scope: {},
      });
      apiSearchMs[user]!.push(performance.now() - started);
    }
  }
  const { examined: rows } = await explainRetrieval(db.pool, { ...request(0), minSimilarity: 0 });
  const { recall } = await recallAgainstExact(db, userId(HEAVY), HEAVY_TOPICS, Number(args['recall-queries']), rng(27));
  await db.close();

  const answerer = await startInstantAnswerer();
  // Both users ask back to back; the per-user rate limit is not what is measured.
  const service = await startService(dataDir, answerer.url, {
    RATE_LIMIT_PER_MINUTE: '0',
    ...(args.server ? { DATABASE_URL: databaseUrl(name) } : {}),
    ...(sharedBuffersMb ? { EMBEDDED_SHARED_BUFFERS_MB: String(sharedBuffersMb) } : {}),
  });
  const client = serviceTurns(service.baseUrl, 1);
  const latencies: Record<number, number[]> = { [HEAVY]: [], [LIGHT]: [] };
  try {
    for (let round = 0; round < Number(args.rounds); round++) {
      for (const user of round % 2 ? [HEAVY, LIGHT] : [LIGHT, HEAVY]) {
        let sessionId: string | undefined;
        for (const question of QUESTIONS) {
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
    if (!args.keep) {
      await rm(dataDir, { recursive: true, force: true });
      if (args.server) await dropDatabase(name);
    }
  }
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const heavy = sorted(latencies[HEAVY]!);
  const light = sorted(latencies[LIGHT]!);
  const search = sorted(searchMs);
  const apiSearch = sorted(apiSearchMs[HEAVY]!);
  const apiSearchLight = sorted(apiSearchMs[LIGHT]!);
  return {
    turns,
    sessions,
    searchP50: percentile(search, 50),
    searchP95: percentile(search, 95),
    apiSearchP50: percentile(apiSearch, 50),
    apiSearchP95: percentile(apiSearch, 95),
    apiSearchLightP50: percentile(apiSearchLight, 50),
    rowsPerTurn: rows / (perSession * (sessions + Math.ceil(sessions / 10))),
    recall,
    heavyP50: percentile(heavy, 50),
    heavyP95: percentile(heavy, 95),
    lightP50: percentile(light, 50),
    lightP95: percentile(light, 95),
    measured: heavy.length,
  };
}

const results = [];
for (const size of args.sizes!.split(',')) {
  const [turns, sessions] = size.split('x').map(Number) as [number, number];
  console.error(`[heavy-user] ${turns} turns in ${sessions} sessions, ${args.server ? 'server' : 'embedded'} database`);
  const result = await measureSize(turns, sessions);
  // Each size's numbers as soon as they are measured: a later size may not finish.
  console.error(`[heavy-user] ${JSON.stringify(result)}`);
  results.push(result);
}
const f = (n: number, d = 1) => n.toFixed(d);
console.log(
  `database: ${args.server ? 'PostgreSQL server' : 'embedded PGlite'}; light user: 1 turn; expired sessions: a tenth more, skipped by memory`,
);
console.log('');
console.log(
  '| heavy user | search p50 ms | search p95 ms | rows examined per stored turn | recall@20 served | /memory/search p50 / p95 ms | light /memory/search p50 ms | /memoryChat heavy p50 / p95 ms | light p50 / p95 ms | heavy ÷ light p50 |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of results) {
  console.log(
    `| ${r.turns} turns in ${r.sessions} sessions | ${f(r.searchP50, 2)} | ${f(r.searchP95, 2)} | ${f(r.rowsPerTurn, 2)} | ${f(r.recall, 3)} | ` +
      `${f(r.apiSearchP50, 2)} / ${f(r.apiSearchP95, 2)} | ${f(r.apiSearchLightP50, 2)} | ` +
      `${f(r.heavyP50)} / ${f(r.heavyP95)} | ${f(r.lightP50)} / ${f(r.lightP95)} | ${f(r.heavyP50 / r.lightP50, 2)} |`,
  );
}
console.log('');
console.log(
  'targets: search p95 <= 10 ms at 5,000 turns in 1,000 sessions; heavy ÷ light p50 <= 1.5 at 2,000, 20,000 and 100,000 turns; recall@20 served >= 0.98',
);
