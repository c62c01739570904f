import pgvector from 'pgvector';
import type { DatabaseScope, Identity } from '../../services/model/identity.js';
import type { HistoryTurn, TurnRef, TurnStatus } from '../../services/model/turns.js';
import type { Queryable } from './queryable.js';
import { databaseScopeSql } from './sql-scope.js';
import { visibleInSearchSql } from './turn-duplicates.js';

/** The latest turns of a live session, newest first: what a new question is checked against for dedup. */
export async function recentQuestions(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  now: Date,
  limit: number,
): Promise<{ turn_number: number; question: string; duplicate_of: number | null }[]> {
  const { rows } = await db.query(
    `SELECT t.turn_number, t.question, t.duplicate_of
     FROM turns t
     JOIN sessions s ON s.tenant_id = t.tenant_id AND s.user_id = t.user_id AND s.session_id = t.session_id
     WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.session_id = $3 AND s.expires_at > $4
     ORDER BY t.turn_number DESC LIMIT $5`,
    [identity.tenantId, identity.userId, sessionId, now, limit],
  );
  return rows;
}

export interface SqlTurn {
  turn_number: number;
  created_at: Date;
  status: TurnStatus;
  question: string;
  sql_query: string;
  query_explanation: string | null;
  tables_used: string[];
  vdp_database_names: string[];
  execution_result: unknown;
}

export type SqlTurnLookup = TurnRef | { keywords: string[] };

/**
 * A turn's SQL by reference or by question keywords, in one round trip that also says whether
 * the session itself is live (so "no session" and "no such turn" answer differently).
 */
export async function findSqlTurn(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  now: Date,
  lookup: SqlTurnLookup,
): Promise<{ session: boolean; turn?: SqlTurn & { has_sql: boolean } }> {
  const params: unknown[] = [identity.tenantId, identity.userId, sessionId, now];
  let where: string;
  let order = 'ORDER BY t.turn_number DESC';
  let offset = 0;
  if ('number' in lookup) {
    params.push(lookup.number);
    where = `t.turn_number = $${params.length}`;
  } else if ('keywords' in lookup) {
    params.push(lookup.keywords);
    where = `t.sql_query IS NOT NULL AND t.question ILIKE ALL ($${params.length}::text[])`;
  } else {
    where = 't.sql_query IS NOT NULL';
    if (lookup.position === 'first') order = 'ORDER BY t.turn_number ASC';
    if (lookup.position === 'previous') offset = 1;
  }
  const { rows } = await db.query<{ turn: Record<string, unknown> | null }>(
    `SELECT to_jsonb(x) AS turn FROM sessions s
     LEFT JOIN LATERAL (
       SELECT t.turn_number, t.created_at, t.status, t.question, t.sql_query, t.query_explanation, t.tables_used,
              t.vdp_database_names, t.execution_result, t.sql_query IS NOT NULL AS has_sql
       FROM turns t
       WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.session_id = $3 AND ${where}
       ${order} OFFSET ${offset} LIMIT 1
     ) x ON TRUE
     WHERE s.tenant_id = $1 AND s.user_id = $2 AND s.session_id = $3 AND s.expires_at > $4`,
    params,
  );
  const row = rows[0];
  if (!row) return { session: false };
  if (!row.turn) return { session: true };
  return { session: true, turn: { ...(row.turn as unknown as SqlTurn & { has_sql: boolean }), created_at: new Date(row.turn.created_at as string) } };
}

export interface SearchRequest {
  identity: Identity;
  now: Date;
  embedding: number[];
  embeddingModel: string;
  k: number;
  minSimilarity: number;
  sessionId?: string;
  scope: DatabaseScope;
}

export interface SearchHit extends Omit<HistoryTurn, 'messages'> {
  session_id: string;
  session_name: string;
  vdp_database_names: string[];
  similarity: number;
}

/**
 * The caller's turns nearest to a query (docs/design.md §9: exact per-user search), within the database
 * scope, in live sessions only, with one turn of each near-duplicate pair.
 */
export async function searchTurns(db: Queryable, req: SearchRequest): Promise<SearchHit[]> {
  const params: unknown[] = [req.identity.tenantId, req.identity.userId, req.now, pgvector.toSql(req.embedding), req.embeddingModel];
  const scope = databaseScopeSql(req.scope, params);
  params.push(req.sessionId ?? null, req.k, req.minSimilarity);
  const [sessionP, kP, minP] = [params.length - 2, params.length - 1, params.length];
  const { rows } = await db.query<SearchHit>(
    `SELECT * FROM (
       SELECT t.session_id::text AS session_id, s.session_name, t.turn_number, t.created_at, t.status, t.question,
              t.answer, t.sql_query, t.tables_used, t.vdp_database_names,
              1 - (t.embedding <=> $4::vector) AS similarity
       FROM turns t
       JOIN sessions s ON s.tenant_id = t.tenant_id AND s.user_id = t.user_id AND s.session_id = t.session_id
       WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.embedding_model = $5 AND s.expires_at > $3
         AND ($${sessionP}::uuid IS NULL OR t.session_id = $${sessionP}::uuid)
         AND ${scope} AND ${visibleInSearchSql('t')}
       ORDER BY t.embedding <=> $4::vector
       LIMIT $${kP}
     ) nearest WHERE similarity >= $${minP}
     ORDER BY similarity DESC`,
    params,
  );
  return rows.map((r) => ({ ...r, similarity: Number(r.similarity) }));
}
