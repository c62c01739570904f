// Seeding at the sizes a migration or a cluster is measured at (1M turns and more), on a PostgreSQL
// server or a Citus coordinator. The turns are what seed.ts stores (SParC turns in several wordings,
// their answers, search terms, `embedding_model`, sessions with their turn counts), but every turn
// gets a vector of its own: its text's embedding plus two small noise vectors, renormalised. Pair
// (g mod NOISE, g div NOISE) of turn number g is unique for g < NOISE², so no two turns share one,
// and each stays near its text's embedding (cosine ~0.94), as paraphrases of one question do.
// Only the plan (user, session, number, time, template) crosses the connection; the rows are built
// server-side. The approximate indexes are dropped for the load and built after it with lists for the
// rows they then hold, as the retention cleanup's upkeep builds them (db/ann-index-upkeep.ts).
import type pg from 'pg';
import { ANN_INDEXES } from '../../services/db/repositories/hybrid-rank.js';
import { scopedDatabase } from '../../services/db/row-security.js';
import { rng, TENANT } from './data.js';
import { DIMENSIONS, EMBEDDING_MODEL, ensureTemplates, insertSessions, type PlannedBatch, planConversations, vectorText } from './seed.js';

/** Noise vectors: turns 0 .. NOISE² - 1 (4.2M) each get a distinct pair. */
const NOISE = 2048;
/** Norm of each noise vector: two of them move a unit vector ~0.35 away (cosine ~0.94 to its text). */
const NOISE_NORM = 0.25;
/** Turns per INSERT statement. */
const BATCH = 20_000;
const DAY = 86_400_000;

export interface BulkSeedOptions {
  fromUser: number;
  toUser: number;
  turnsPerUser: number;
  now?: Date;
  log?: (msg: string) => void;
}

async function ensureNoise(pool: pg.Pool): Promise<void> {
  await pool.query('CREATE TABLE IF NOT EXISTS bench_noise (id integer PRIMARY KEY, v vector NOT NULL)');
  const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM bench_noise');
  if (Number(rows[0]!.n) === NOISE) return;
  await pool.query('TRUNCATE bench_noise');
  const r = rng(4242);
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  for (let from = 0; from < NOISE; from += 256) {
    const ids: number[] = [];
    const vectors: string[] = [];
    for (let id = from; id < from + 256; id++) {
      const v = Array.from({ length: DIMENSIONS }, gaussian);
      const norm = Math.hypot(...v);
      ids.push(id);
      vectors.push(vectorText(v.map((x) => (x / norm) * NOISE_NORM)));
    }
    await pool.query('INSERT INTO bench_noise SELECT * FROM unnest($1::int[], $2::vector[])', [ids, vectors]);
  }
}

/**
 * The approximate indexes of `turns` dropped around `work`, then built by the upkeep of
 * db/ann-index-upkeep.ts with lists for the rows they hold.
 */
export async function withoutAnnIndexes<T>(pool: pg.Pool, work: () => Promise<T>, log?: (msg: string) => void): Promise<T> {
  for (const { index } of ANN_INDEXES.values()) await pool.query(`DROP INDEX IF EXISTS ${index}`);
  const result = await work();
  const t0 = performance.now();
  for (const state of await scopedDatabase(pool).maintainAnnIndexes()) {
    log?.(`  built ${state.index} with ${state.rebuiltWith} lists for ${state.rows} rows (per shard)`);
  }
  log?.(`  approximate indexes built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return result;
}

/**
 * Seeds users [fromUser, toUser) with `turnsPerUser` turns each, in conversations of 1-5 turns of
 * the user's own SParC databases, into a migrated database (a single server, or a Citus coordinator
 * whose tables are distributed already). Does not touch the approximate indexes: see withoutAnnIndexes.
 */
export async function bulkSeed(pool: pg.Pool, opts: BulkSeedOptions): Promise<{ turns: number; sessions: number; ms: number }> {
  const started = performance.now();
  if (opts.toUser * opts.turnsPerUser > NOISE * NOISE)
    throw new Error(`bulkSeed makes distinct vectors for ${NOISE * NOISE} turns at most`);
  const templates = await ensureTemplates(pool);
  await ensureNoise(pool);
  opts.log?.(`  ${templates} turn texts and ${NOISE} noise vectors in place`);
  const now = opts.now ?? new Date();
  const expires = new Date(now.getTime() + 7 * DAY);
  let turns = 0;
  let sessions = 0;
  // Each turn its template's text, and a vector of its own: the text's embedding plus two noise vectors
  // picked by the turn's serial (NOISE² combinations).
  const store = async (p: PlannedBatch) => {
    await insertSessions(pool, p, expires);
    await pool.query(
      `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, sql_query,
                          query_explanation, tables_used, vdp_database_names, execution_result, embedding, embedding_model,
                          search_terms)
       SELECT '${TENANT}', r.u, r.s, r.n, r.c, 'ok', t.question, t.answer, t.sql_query, t.query_explanation, t.tables_used,
              ARRAY[t.database], t.execution_result, l2_normalize(l2_normalize(t.features) + a.v + b.v), '${EMBEDDING_MODEL}', t.search_terms
       FROM unnest($1::text[], $2::uuid[], $3::int[], $4::timestamptz[], $5::int[], $6::int[]) AS r(u, s, n, c, tid, g)
       JOIN bench_templates t ON t.id = r.tid
       JOIN bench_noise a ON a.id = r.g % ${NOISE}
       JOIN bench_noise b ON b.id = r.g / ${NOISE}`,
      [p.users, p.sessions, p.numbers, p.times, p.templates, p.serials],
    );
    turns += p.users.length;
    sessions += p.sIds.length;
  };
  await planConversations({ ...opts, now }, BATCH, store, (done) => {
    if (opts.log && done % 1000 === 0) {
      opts.log(`  seeded ${done} users (${((performance.now() - started) / 1000).toFixed(0)} s)`);
    }
  });
  await pool.query('ANALYZE sessions; ANALYZE turns');
  return { turns, sessions, ms: performance.now() - started };
}
