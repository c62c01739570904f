import { type Param, param, type SqlFragment, sql, toQuery } from '../sql.js';
import { vectorParam } from '../vector-param.js';
import { lexicalMatch } from './hybrid-rank.js';
import type { Queryable } from './queryable.js';

/** A tenant's verified pair as admins see it (migration 023): never its vector or terms. */
export interface PairRow {
  pair_id: string;
  question: string | null;
  sql_query: string;
  tables_used: string[];
  vdp_database_names: string[];
  vdp_tag_names: string[];
  answerer: string | null;
  author_user_id: string | null;
  source_session_id: string | null;
  source_turn_number: number | null;
  promoted_via: 'admin' | 'feedback';
  promoted_at: Date;
  adopted_at: Date | null;
  question_edited_at: Date | null;
  sql_edited_at: Date | null;
  retired_at: Date | null;
  /** Users' negative ratings of answers whose memory held the pair (admins' reads only; 0 otherwise). */
  negative_feedback: number;
}

const PAIR_COLUMNS = sql`p.pair_id, p.question, p.sql_query, p.tables_used, p.vdp_database_names, p.vdp_tag_names, p.answerer,
  p.author_user_id, p.source_session_id, p.source_turn_number, p.promoted_via, p.promoted_at, p.adopted_at,
  p.question_edited_at, p.sql_edited_at, p.retired_at`;

/**
 * The pairs with their counts of negative feedback, read by a statement of its own: on Citus the
 * feedback is on its users' shards and the pairs a reference table, and a subquery correlating the
 * two is refused there.
 */
async function withNegativeFeedback(db: Queryable, tenantId: string, pairs: PairRow[]): Promise<PairRow[]> {
  if (!pairs.length) return pairs;
  const { rows } = await db.query<{ pair_id: string; n: number }>(
    toQuery(sql`SELECT pair_id, count(*)::int AS n FROM verified_pair_feedback
     WHERE tenant_id = ${tenantId} AND pair_id = ANY(${pairs.map((p) => p.pair_id)}::uuid[]) GROUP BY pair_id`),
  );
  const counts = new Map(rows.map((r) => [r.pair_id, r.n]));
  return pairs.map((p) => ({ ...p, negative_feedback: counts.get(p.pair_id) ?? 0 }));
}

export interface TurnSource {
  tenantId: string;
  userId: string;
  sessionId: string;
  turnNumber: number;
}

/** The live pair promoted from this turn, if any: a turn is promoted once. */
export async function findPairOfTurn(db: Queryable, source: TurnSource): Promise<PairRow | undefined> {
  const { rows } = await db.query<PairRow>(
    toQuery(sql`SELECT ${PAIR_COLUMNS}, 0 AS negative_feedback FROM verified_pairs p
     WHERE p.tenant_id = ${source.tenantId} AND p.author_user_id = ${source.userId}
       AND p.source_session_id = ${source.sessionId} AND p.source_turn_number = ${source.turnNumber} AND p.retired_at IS NULL`),
  );
  return rows[0];
}

/**
 * Copies an answered turn (status ok, with SQL, not rated down) into a new pair, with its stored
 * (masked) question, its vector and its terms; run in the author's scope, which alone reads the turn.
 * Undefined when the turn is not there or not such a turn.
 */
export async function insertPairFromTurn(
  db: Queryable,
  source: TurnSource,
  pair: { pairId: string; via: 'admin' | 'feedback'; now: Date },
): Promise<PairRow | undefined> {
  const { rows } = await db.query<PairRow>(
    toQuery(sql`INSERT INTO verified_pairs AS p (tenant_id, pair_id, question, sql_query, tables_used, vdp_database_names, vdp_tag_names,
       answerer, embedding, embedding_model, search_terms, author_user_id, source_session_id, source_turn_number, promoted_via, promoted_at)
     SELECT t.tenant_id, ${pair.pairId}, t.question, t.sql_query, t.tables_used, t.vdp_database_names, t.vdp_tag_names,
            t.answerer, t.embedding, t.embedding_model, t.search_terms, t.user_id, t.session_id, t.turn_number, ${pair.via}, ${pair.now}
     FROM turns t
     WHERE t.tenant_id = ${source.tenantId} AND t.user_id = ${source.userId} AND t.session_id = ${source.sessionId}
       AND t.turn_number = ${source.turnNumber} AND t.status = 'ok' AND t.sql_query IS NOT NULL
       AND t.feedback_rating IS DISTINCT FROM 'down'
     RETURNING ${PAIR_COLUMNS}, 0 AS negative_feedback`),
  );
  return rows[0];
}

export async function findPair(db: Queryable, tenantId: string, pairId: string): Promise<PairRow | undefined> {
  const { rows } = await db.query<PairRow>(
    toQuery(sql`SELECT ${PAIR_COLUMNS}, 0 AS negative_feedback FROM verified_pairs p
     WHERE p.tenant_id = ${tenantId} AND p.pair_id = ${pairId}`),
  );
  return (await withNegativeFeedback(db, tenantId, rows))[0];
}

/** A tenant's pairs, newest first; retired ones only when asked for. */
export async function listPairs(db: Queryable, tenantId: string, q: { retired: boolean; limit: number }): Promise<PairRow[]> {
  const { rows } = await db.query<PairRow>(
    toQuery(sql`SELECT ${PAIR_COLUMNS}, 0 AS negative_feedback FROM verified_pairs p
     WHERE p.tenant_id = ${tenantId} AND (${q.retired}::boolean OR p.retired_at IS NULL)
     ORDER BY p.promoted_at DESC, p.pair_id LIMIT ${q.limit}`),
  );
  return withNegativeFeedback(db, tenantId, rows);
}

export interface PairEdit {
  question?: { text: string; embedding: number[] | null; embeddingModel: string };
  sqlQuery?: string;
  /** The pair's terms again, from its question and SQL as they are after the edit. */
  searchTerms: string;
  tablesUsed: string[];
}

/** An admin's correction: the question (embedded again) or the SQL; marks which was edited. */
export async function updatePair(db: Queryable, tenantId: string, pairId: string, edit: PairEdit, now: Date): Promise<boolean> {
  const q = edit.question;
  const { rowCount } = await db.query(
    toQuery(sql`UPDATE verified_pairs SET
       question = CASE WHEN ${q !== undefined}::boolean THEN ${q?.text ?? null}::text ELSE question END,
       embedding = CASE WHEN ${q !== undefined}::boolean THEN ${q?.embedding ? vectorParam(q.embedding) : null}::vector ELSE embedding END,
       embedding_model = CASE WHEN ${q !== undefined}::boolean THEN ${q?.embeddingModel ?? null}::text ELSE embedding_model END,
       question_edited_at = CASE WHEN ${q !== undefined}::boolean THEN ${now}::timestamptz ELSE question_edited_at END,
       sql_query = COALESCE(${edit.sqlQuery ?? null}::text, sql_query),
       sql_edited_at = CASE WHEN ${edit.sqlQuery !== undefined}::boolean THEN ${now}::timestamptz ELSE sql_edited_at END,
       tables_used = ${edit.tablesUsed}::text[],
       search_terms = ${edit.searchTerms}::tsvector
     WHERE tenant_id = ${tenantId} AND pair_id = ${pairId}`),
  );
  return (rowCount ?? 0) > 0;
}

/** Retires or adopts a pair: `column` is set once, a second call changes nothing. */
export async function markPair(db: Queryable, tenantId: string, pairId: string, mark: 'retired' | 'adopted', now: Date): Promise<boolean> {
  const column = mark === 'retired' ? sql`retired_at` : sql`adopted_at`;
  const { rowCount } = await db.query(
    toQuery(sql`UPDATE verified_pairs SET ${column} = COALESCE(${column}, ${now}) WHERE tenant_id = ${tenantId} AND pair_id = ${pairId}`),
  );
  return (rowCount ?? 0) > 0;
}

/** A pair as recalled into a question's memory. */
export interface PairExample {
  pair_id: string;
  question: string;
  sql_query: string;
  tables_used: string[];
  similarity: number;
}

/** How many pairs a question's memory takes, and the cosine floor of one found by the vector alone (null: none). */
export interface PairRecall {
  k: number;
  minSimilarity: number | null;
}

/** RRF's rank constant, as hybrid-rank.ts fuses a user's turns. */
const RRF_RANK_CONSTANT = 60;

/**
 * A query of the tenant's live pairs most like the question (`rank` 1 the best), within the request's bounds (`scope`
 * and `answerer`, conditions over `t`, as for the user's turns): ranked by cosine and by lexical
 * match, fused by reciprocal rank, the best pair of each set of tables first (as a user's similar
 * turns are, memory-retrieval.ts). It runs inside the question's retrieval statement, with that
 * statement's vector and terms: one round trip still. Every live pair of the tenant in scope is
 * scored exactly: a tenant's pairs are curated, hundreds rather than a heavy user's hundred thousands.
 */
export function pairCandidates(s: {
  tenant: Param;
  vector: Param;
  query: Param;
  queryTerms: Param;
  embeddingModel: string;
  scope: SqlFragment;
  answerer: SqlFragment;
  recall: PairRecall;
}): SqlFragment {
  const floor = param(s.recall.minSimilarity);
  return sql`SELECT pair_id, question, sql_query, tables_used, 1 - distance AS similarity,
            row_number() OVER (ORDER BY nth, score DESC, distance, pair_id) AS rank
     FROM (SELECT *, row_number() OVER (PARTITION BY table_set ORDER BY score DESC, distance, pair_id) AS nth
       FROM (SELECT *, 1.0 / (${RRF_RANK_CONSTANT} + by_vector)
                       + CASE WHEN lexical > 0 THEN 1.0 / (${RRF_RANK_CONSTANT} + by_terms) ELSE 0 END AS score
         FROM (SELECT *, row_number() OVER (ORDER BY distance, pair_id) AS by_vector,
                      row_number() OVER (ORDER BY lexical DESC, distance, pair_id) AS by_terms
           FROM (SELECT t.pair_id, t.question, t.sql_query, t.tables_used, t.embedding <=> ${s.vector}::vector AS distance,
                        ${lexicalMatch(s.query, s.queryTerms)} AS lexical, strip(ts_filter(t.search_terms, '{d}')) AS table_set
             FROM verified_pairs t
             WHERE t.tenant_id = ${s.tenant} AND t.retired_at IS NULL AND t.embedding_model = ${s.embeddingModel}
               AND t.embedding IS NOT NULL AND t.question IS NOT NULL AND ${s.scope} AND ${s.answerer}) cand) ranked
         WHERE ${floor}::float8 IS NULL OR 1 - distance >= ${floor}::float8 OR lexical > 0) fused) grouped
     ORDER BY nth, score DESC, distance, pair_id
     LIMIT ${s.recall.k}`;
}

export function pairFromJson(row: Record<string, unknown>): PairExample {
  return {
    pair_id: String(row.pair_id),
    question: String(row.question),
    sql_query: String(row.sql_query),
    tables_used: (row.tables_used as string[] | null) ?? [],
    similarity: Number(row.similarity),
  };
}

/** A user's rating of a turn whose memory held these pairs: down counts against each, anything else takes it back. */
export async function setPairFeedback(db: Queryable, turn: TurnSource, pairIds: string[], rating: 'up' | 'down', now: Date): Promise<void> {
  if (rating === 'down' && pairIds.length) {
    await db.query(
      toQuery(sql`INSERT INTO verified_pair_feedback (tenant_id, user_id, session_id, turn_number, pair_id, at)
       SELECT ${turn.tenantId}, ${turn.userId}, ${turn.sessionId}, ${turn.turnNumber}, p.pair_id, ${now}
       FROM verified_pairs p WHERE p.tenant_id = ${turn.tenantId} AND p.pair_id = ANY(${pairIds}::uuid[])
       ON CONFLICT DO NOTHING`),
    );
  } else if (rating === 'up') {
    await db.query(
      toQuery(sql`DELETE FROM verified_pair_feedback
       WHERE tenant_id = ${turn.tenantId} AND user_id = ${turn.userId} AND session_id = ${turn.sessionId} AND turn_number = ${turn.turnNumber}`),
    );
  }
}

/** The pairs promoted from a user's turns, for their export: adopted ones too, while they name the user. */
export async function listPairsOfAuthor(db: Queryable, tenantId: string, userId: string): Promise<PairRow[]> {
  const { rows } = await db.query<PairRow>(
    toQuery(sql`SELECT ${PAIR_COLUMNS}, 0 AS negative_feedback FROM verified_pairs p
     WHERE p.tenant_id = ${tenantId} AND p.author_user_id = ${userId} ORDER BY p.promoted_at, p.pair_id`),
  );
  return rows;
}

/**
 * A step of a user's erasure (core/gdpr/erase.ts), up to `limit` pairs: their pairs nobody adopted
 * are deleted (with the feedback on them); an adopted pair loses its author, its source turn and,
 * unless an admin rewrote it, the question the author wrote with its vector and terms (it stays
 * listed, its SQL kept, and is recalled again once an admin writes a question).
 */
export async function erasePairsOfAuthor(db: Queryable, tenantId: string, userId: string, limit: number): Promise<number> {
  const deleted = await db.query(
    toQuery(sql`DELETE FROM verified_pairs WHERE tenant_id = ${tenantId} AND pair_id IN (
       SELECT pair_id FROM verified_pairs WHERE tenant_id = ${tenantId} AND author_user_id = ${userId} AND adopted_at IS NULL LIMIT ${limit})`),
  );
  const kept = await db.query(
    toQuery(sql`UPDATE verified_pairs SET author_user_id = NULL, source_session_id = NULL, source_turn_number = NULL,
       question = CASE WHEN question_edited_at IS NULL THEN NULL ELSE question END,
       embedding = CASE WHEN question_edited_at IS NULL THEN NULL ELSE embedding END,
       embedding_model = CASE WHEN question_edited_at IS NULL THEN NULL ELSE embedding_model END,
       search_terms = CASE WHEN question_edited_at IS NULL THEN NULL ELSE search_terms END
     WHERE tenant_id = ${tenantId} AND pair_id IN (
       SELECT pair_id FROM verified_pairs WHERE tenant_id = ${tenantId} AND author_user_id = ${userId} AND adopted_at IS NOT NULL LIMIT ${limit})`),
  );
  return (deleted.rowCount ?? 0) + (kept.rowCount ?? 0);
}
