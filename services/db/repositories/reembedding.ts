import pgvector from 'pgvector';
import type { Queryable } from './queryable.js';

export interface TurnKey {
  tenant_id: string;
  user_id: string;
  session_id: string;
  turn_number: number;
}

export interface TurnToEmbed extends TurnKey {
  embedding_model: string | null;
  question: string;
  sql_query: string | null;
  tables_used: string[];
  answer: string;
}

/**
 * Which turns need work: those not embedded with the model ($1), without lexical terms, or whose terms
 * lack the current version's lexeme ($2, a tsquery: lexical-terms.ts TERMS_VERSION).
 */
export interface EmbeddingTarget {
  modelId: string;
  termsVersion: string;
}
const STALE = '(embedding_model IS DISTINCT FROM $1 OR search_terms IS NULL OR NOT search_terms @@ $2::tsquery)';

/**
 * A verified pair that is still recalled and has a question to embed; a pair whose question went with
 * its author's erasure has no vector and no terms until an admin writes one.
 */
const PAIR_STALE = `retired_at IS NULL AND question IS NOT NULL AND ${STALE}`;

/**
 * Whether any turn or live verified pair carries another model's embedding, or none (a failed embed),
 * or no or older lexical terms.
 */
export async function hasStaleEmbeddings(db: Queryable, target: EmbeddingTarget): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM turns WHERE ${STALE}) OR EXISTS (SELECT 1 FROM verified_pairs WHERE ${PAIR_STALE}) AS found`,
    [target.modelId, target.termsVersion],
  );
  return rows[0]!.found;
}

/**
 * The next turns (in primary-key order after `after`) not embedded with `modelId` or without current lexical terms. A cross-user
 * maintenance read, keyed by the full primary key so that writes stay per (tenant, user).
 */
export async function nextTurnsToEmbed(
  db: Queryable,
  target: EmbeddingTarget,
  after: TurnKey | null,
  limit: number,
): Promise<TurnToEmbed[]> {
  const { rows } = await db.query<TurnToEmbed>(
    `SELECT tenant_id, user_id, session_id, turn_number, embedding_model, question, sql_query, tables_used, answer FROM turns
     WHERE ${STALE}
       AND ($3::text IS NULL OR (tenant_id, user_id, session_id, turn_number) > ($3, $4, $5::uuid, $6::integer))
     ORDER BY tenant_id, user_id, session_id, turn_number
     LIMIT $7`,
    [
      target.modelId,
      target.termsVersion,
      after?.tenant_id ?? null,
      after?.user_id ?? null,
      after?.session_id ?? null,
      after?.turn_number ?? null,
      limit,
    ],
  );
  return rows;
}

/**
 * Writes one batch of lexical terms and new vectors in one statement; a turn without a new vector
 * (already of the model, or its text embeds to nothing) keeps the one it has.
 */
export async function saveEmbeddings(
  db: Queryable,
  modelId: string,
  batch: { key: TurnKey; embedding: number[] | null; searchTerms: string }[],
): Promise<number> {
  if (!batch.length) return 0;
  const { rowCount } = await db.query(
    `UPDATE turns t SET embedding = COALESCE(u.embedding::vector, t.embedding),
       embedding_model = CASE WHEN u.embedding IS NULL THEN t.embedding_model ELSE $1 END,
       search_terms = u.search_terms::tsvector
     FROM unnest($2::text[], $3::text[], $4::uuid[], $5::integer[], $6::text[], $7::text[])
       AS u(tenant_id, user_id, session_id, turn_number, embedding, search_terms)
     WHERE t.tenant_id = u.tenant_id AND t.user_id = u.user_id AND t.session_id = u.session_id
       AND t.turn_number = u.turn_number`,
    [
      modelId,
      batch.map((b) => b.key.tenant_id),
      batch.map((b) => b.key.user_id),
      batch.map((b) => b.key.session_id),
      batch.map((b) => b.key.turn_number),
      batch.map((b) => (b.embedding ? pgvector.toSql(b.embedding) : null)),
      batch.map((b) => b.searchTerms),
    ],
  );
  return rowCount ?? 0;
}

export interface PairKey {
  tenant_id: string;
  pair_id: string;
}

export interface PairToEmbed extends PairKey {
  embedding_model: string | null;
  question: string;
  sql_query: string;
  tables_used: string[];
}

/** The next live pairs (in primary-key order after `after`) not embedded with `modelId` or without current lexical terms. */
export async function nextPairsToEmbed(
  db: Queryable,
  target: EmbeddingTarget,
  after: PairKey | null,
  limit: number,
): Promise<PairToEmbed[]> {
  const { rows } = await db.query<PairToEmbed>(
    `SELECT tenant_id, pair_id, embedding_model, question, sql_query, tables_used FROM verified_pairs
     WHERE ${PAIR_STALE} AND ($3::text IS NULL OR (tenant_id, pair_id) > ($3, $4::uuid))
     ORDER BY tenant_id, pair_id
     LIMIT $5`,
    [target.modelId, target.termsVersion, after?.tenant_id ?? null, after?.pair_id ?? null, limit],
  );
  return rows;
}

/** As saveEmbeddings, for verified pairs. */
export async function savePairEmbeddings(
  db: Queryable,
  modelId: string,
  batch: { key: PairKey; embedding: number[] | null; searchTerms: string }[],
): Promise<number> {
  if (!batch.length) return 0;
  const { rowCount } = await db.query(
    `UPDATE verified_pairs p SET embedding = COALESCE(u.embedding::vector, p.embedding),
       embedding_model = CASE WHEN u.embedding IS NULL THEN p.embedding_model ELSE $1 END,
       search_terms = u.search_terms::tsvector
     FROM unnest($2::text[], $3::uuid[], $4::text[], $5::text[]) AS u(tenant_id, pair_id, embedding, search_terms)
     WHERE p.tenant_id = u.tenant_id AND p.pair_id = u.pair_id`,
    [
      modelId,
      batch.map((b) => b.key.tenant_id),
      batch.map((b) => b.key.pair_id),
      batch.map((b) => (b.embedding ? pgvector.toSql(b.embedding) : null)),
      batch.map((b) => b.searchTerms),
    ],
  );
  return rowCount ?? 0;
}
