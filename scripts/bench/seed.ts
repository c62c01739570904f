// Bulk seeding straight into sessions/turns (and the LangChain peer's own tables) over ONE connection.
// Moving bytes over the embedded database's socket is the slow part (~0.5 ms per 3 KB row, plus
// ~0.7 ms to parse a 384-d vector), so each distinct turn text is embedded and sent ONCE, as a
// template (every SParC turn in several wordings), and so is each of a few thousand narrowings (a
// year, region or threshold a follow-up adds: data.ts). Turns are then made server-side by
// INSERT ... SELECT from compact arrays (user, session, number, time, template, narrowing): the
// template's question with the narrowing's words, embedded as the normalised sum of both texts' hashed
// features, which is the local embedder's vector of the joined text (but for one word pair). So every
// turn has its own vector, near its template's, as real follow-ups do, where repeating the templates
// left each vector in a hundred copies.
import { randomUUID } from 'node:crypto';
import { AIMessage, HumanMessage, mapChatMessagesToStoredMessages } from '@langchain/core/messages';
import type pg from 'pg';
import { LOCAL_MODEL } from '../../services/config/config.js';
import { turnSearchTerms } from '../../services/core/search-terms/lexical-terms.js';
import { textFeatures } from '../../services/providers/embeddings/local-embedder.js';
import { answerFor, loadSparc, narrowing, rng, TENANT, turnEmbeddingText, userDatabases, userId, varyQuestion } from './data.js';

export const DIMENSIONS = 384;
export const EMBEDDING_MODEL = `${LOCAL_MODEL}@${DIMENSIONS}`;
export const LC_HISTORY_TABLE = 'langchain_chat_histories';
export const LC_VECTOR_TABLE = 'langchain_pg_embedding';
/** Wordings per SParC turn: 1,203 turns x 8 = ~9.6k distinct stored texts and vectors. */
export const VARIANTS = 8;
/** Narrowings: with the templates ~158M combinations (each turn draws one of each), so that few turns share a vector. */
export const NARROWINGS = 16_384;
const TEMPLATE_BATCH = 200;
const TURN_BATCH = 5000;
const DAY = 86_400_000;

/** pgvector text with float4 precision (what is stored anyway): about half of JSON's length. */
export function vectorText(v: ArrayLike<number>): string {
  let s = '[';
  for (let i = 0; i < v.length; i++) s += (i ? ',' : '') + Number(v[i]!.toPrecision(7));
  return `${s}]`;
}

/** Template id of (interaction, turn, variant): interactions are numbered in dev.json order. */
export function templateIndex(): number[][] {
  let next = 0;
  return loadSparc().map((i) =>
    i.turns.map(() => {
      next += VARIANTS;
      return next - VARIANTS;
    }),
  );
}

export async function ensureTemplates(pool: pg.Pool): Promise<number> {
  await pool.query(`CREATE TABLE IF NOT EXISTS bench_templates (
    id integer PRIMARY KEY, database text NOT NULL, question text NOT NULL, answer text NOT NULL,
    sql_query text NOT NULL, query_explanation text NOT NULL, tables_used text[] NOT NULL,
    execution_result jsonb NOT NULL, features vector NOT NULL, lc_human jsonb NOT NULL, lc_ai jsonb NOT NULL,
    search_terms tsvector NOT NULL)`);
  const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM bench_templates');
  if (Number(rows[0]!.n) > 0) return Number(rows[0]!.n);
  await insertNarrowings(pool);
  const ids = templateIndex();
  const sparc = loadSparc();
  let batch: unknown[][] = [];
  let count = 0;
  const flush = async () => {
    if (!batch.length) return;
    const params: unknown[] = [];
    const values = batch.map((row) => {
      const b = params.length;
      params.push(...row);
      return `(${row.map((_, i) => `$${b + i + 1}`).join(',')})`;
    });
    await pool.query(`INSERT INTO bench_templates VALUES ${values.join(',')}`, params);
    count += batch.length;
    batch = [];
  };
  for (let i = 0; i < sparc.length; i++) {
    const interaction = sparc[i]!;
    for (let j = 0; j < interaction.turns.length; j++) {
      const t = interaction.turns[j]!;
      for (let v = 0; v < VARIANTS; v++) {
        const question = v === 0 ? t.question : varyQuestion(rng(31 * (i * 16 + j) + v), t.question);
        const a = answerFor(question, t.sql);
        const [human, ai] = mapChatMessagesToStoredMessages([new HumanMessage(question), new AIMessage(a.answer)]);
        batch.push([
          ids[i]![j]! + v,
          interaction.database,
          question,
          a.answer,
          a.sql_query,
          a.query_explanation,
          a.tables_used,
          JSON.stringify(a.execution_result),
          vectorText(textFeatures(turnEmbeddingText(question, a), DIMENSIONS)),
          JSON.stringify({ ...human!.data, type: human!.type }),
          JSON.stringify({ ...ai!.data, type: ai!.type }),
          turnSearchTerms({ question, sqlQuery: a.sql_query, tablesUsed: a.tables_used }),
        ]);
        if (batch.length >= TEMPLATE_BATCH) await flush();
      }
    }
  }
  await flush();
  return count;
}

/** The narrowings: their words, hashed features and search terms (the question's weight), once. */
async function insertNarrowings(pool: pg.Pool): Promise<void> {
  await pool.query(`CREATE TABLE bench_narrowings (id integer PRIMARY KEY, phrase text NOT NULL, features vector NOT NULL,
    search_terms tsvector NOT NULL)`);
  const r = rng(4242);
  const phrases = new Set<string>();
  while (phrases.size < NARROWINGS) phrases.add(narrowing(r).phrase);
  const all = [...phrases];
  for (let start = 0; start < all.length; start += TEMPLATE_BATCH) {
    const batch = all.slice(start, start + TEMPLATE_BATCH);
    await pool.query(
      `INSERT INTO bench_narrowings SELECT start + ord - 1, phrase, features::vector, terms::tsvector
       FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS r(phrase, features, terms, ord), (SELECT $1::int AS start) s`,
      [
        start,
        batch,
        batch.map((p) => vectorText(textFeatures(p, DIMENSIONS))),
        batch.map((p) => turnSearchTerms({ question: p, sqlQuery: null, tablesUsed: [] })),
      ],
    );
  }
}

export interface SeedOptions {
  fromUser: number;
  toUser: number;
  turnsPerUser: number;
  withLangchain: boolean;
  now?: Date;
  log?: (msg: string) => void;
}

/**
 * Conversations planned for users, in columns (one entry per turn, then one per session), as the
 * seeders insert them with `unnest`: each turn a variant of a SParC turn of the user's own databases
 * (`templates`, ids of bench_templates), narrowed by `narrowings`; `serials` numbers a user's turns
 * across the run (user × turnsPerUser + k).
 */
export interface PlannedBatch {
  users: string[];
  sessions: string[];
  numbers: number[];
  times: Date[];
  templates: number[];
  narrowings: number[];
  serials: number[];
  sUsers: string[];
  sIds: string[];
  sNames: string[];
  sCreated: Date[];
  sUpdated: Date[];
  sCount: number[];
}
const emptyBatch = (): PlannedBatch => ({
  users: [],
  sessions: [],
  numbers: [],
  times: [],
  templates: [],
  narrowings: [],
  serials: [],
  sUsers: [],
  sIds: [],
  sNames: [],
  sCreated: [],
  sUpdated: [],
  sCount: [],
});

/**
 * Plans users [fromUser, toUser) with `turnsPerUser` turns each, in conversations of 1-5 turns over
 * the last 6 days, and hands them to `store` at least `batchSize` turns at a time (whole users);
 * `progress` after each user. The same seed gives the same plan.
 */
export async function planConversations(
  opts: { fromUser: number; toUser: number; turnsPerUser: number; now: Date },
  batchSize: number,
  store: (batch: PlannedBatch) => Promise<void>,
  progress?: (usersDone: number) => void,
): Promise<void> {
  const sparc = loadSparc();
  const ids = templateIndex();
  const byDatabase = new Map<string, number[]>();
  sparc.forEach((i, n) => {
    byDatabase.set(i.database, [...(byDatabase.get(i.database) ?? []), n]);
  });
  let b = emptyBatch();
  const flush = async () => {
    if (!b.users.length) return;
    await store(b);
    b = emptyBatch();
  };
  for (let u = opts.fromUser; u < opts.toUser; u++) {
    const r = rng(7_000_000 + u);
    const mine = userDatabases(u).flatMap((d) => byDatabase.get(d) ?? []);
    let k = 0;
    while (k < opts.turnsPerUser) {
      const ii = mine[Math.floor(r() * mine.length)]!;
      const interaction = sparc[ii]!;
      const n = Math.min(opts.turnsPerUser - k, interaction.turns.length);
      const session = randomUUID();
      const start = opts.now.getTime() - Math.floor(r() * 6 * DAY);
      for (let j = 0; j < n; j++, k++) {
        b.users.push(userId(u));
        b.sessions.push(session);
        b.numbers.push(j + 1);
        b.times.push(new Date(start + j * 40_000));
        b.templates.push(ids[ii]![j]! + Math.floor(r() * VARIANTS));
        b.narrowings.push(Math.floor(r() * NARROWINGS));
        b.serials.push(u * opts.turnsPerUser + k);
      }
      b.sUsers.push(userId(u));
      b.sIds.push(session);
      b.sNames.push(interaction.turns[0]!.question.slice(0, 100));
      b.sCreated.push(new Date(start));
      b.sUpdated.push(new Date(start + (n - 1) * 40_000));
      b.sCount.push(n);
    }
    if (b.users.length >= batchSize) await flush();
    progress?.(u + 1 - opts.fromUser);
  }
  await flush();
}

/** The planned sessions of `b`, each counting its turns, live until `expires`. */
export async function insertSessions(pool: pg.Pool, b: PlannedBatch, expires: Date): Promise<void> {
  await pool.query(
    `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
     SELECT '${TENANT}', u, s, name, c, up, $7, n, n
     FROM unnest($1::text[], $2::uuid[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::int[]) AS r(u, s, name, c, up, n)`,
    [b.sUsers, b.sIds, b.sNames, b.sCreated, b.sUpdated, b.sCount, expires],
  );
}

/** Seeds users [fromUser, toUser) with `turnsPerUser` turns each, in conversations of 1-5 turns. */
export async function seed(pool: pg.Pool, opts: SeedOptions): Promise<{ turns: number; sessions: number; ms: number }> {
  const started = performance.now();
  const now = opts.now ?? new Date();
  const expires = new Date(now.getTime() + 7 * DAY);
  let turns = 0;
  let sessions = 0;
  const store = async (b: PlannedBatch) => {
    await insertSessions(pool, b, expires);
    const rows = `unnest($1::text[], $2::uuid[], $3::int[], $4::timestamptz[], $5::int[], $6::int[]) WITH ORDINALITY AS r(u, s, n, c, tid, nid, ord)
                  JOIN bench_templates t ON t.id = r.tid JOIN bench_narrowings x ON x.id = r.nid
                  CROSS JOIN LATERAL (SELECT regexp_replace(t.question, '[?.!\\s]+$', '') || ' ' || x.phrase || '?' AS question,
                                             l2_normalize(t.features + x.features) AS embedding) v`;
    const params = [b.users, b.sessions, b.numbers, b.times, b.templates, b.narrowings];
    await pool.query(
      `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, sql_query,
                          query_explanation, tables_used, vdp_database_names, execution_result, embedding, embedding_model,
                          search_terms)
       SELECT '${TENANT}', r.u, r.s, r.n, r.c, 'ok', v.question, t.answer, t.sql_query, t.query_explanation, t.tables_used,
              ARRAY[t.database], t.execution_result, v.embedding, '${EMBEDDING_MODEL}', t.search_terms || x.search_terms
       FROM ${rows}`,
      params,
    );
    if (opts.withLangchain) {
      await pool.query(
        `INSERT INTO ${LC_HISTORY_TABLE} (session_id, message)
         SELECT r.s, m.message FROM ${rows}
         CROSS JOIN LATERAL (VALUES (1, jsonb_set(t.lc_human, '{content}', to_jsonb(v.question))), (2, t.lc_ai)) AS m(k, message)
         ORDER BY r.ord, m.k`,
        params,
      );
      await pool.query(
        `INSERT INTO ${LC_VECTOR_TABLE} (text, metadata, embedding)
         SELECT v.question, jsonb_build_object('user_id', r.u, 'session_id', r.s, 'turn_number', r.n, 'sql_query', t.sql_query,
                  'answer', t.answer, 'tables_used', to_jsonb(t.tables_used), 'database', t.database), v.embedding
         FROM ${rows}`,
        params,
      );
    }
    turns += b.users.length;
    sessions += b.sIds.length;
  };
  await planConversations({ ...opts, now }, TURN_BATCH, store, (done) => {
    if (opts.log && done % 2000 === 0) opts.log(`  seeded ${done} users`);
  });
  await pool.query('ANALYZE sessions; ANALYZE turns');
  if (opts.withLangchain) await pool.query(`ANALYZE ${LC_HISTORY_TABLE}; ANALYZE ${LC_VECTOR_TABLE}`);
  return { turns, sessions, ms: performance.now() - started };
}
