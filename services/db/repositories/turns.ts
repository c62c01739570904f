import type { DatabaseScope, Identity } from '../../model/identity.js';
import type { HistoryTurn, RecentQuestion, TurnRef, TurnStatus } from '../../model/turns.js';
import { param, type SqlFragment, sql, toQuery } from '../sql.js';
import { annHistory, fusedCandidates } from './hybrid-rank.js';
import { rememberPath } from './path-memory.js';
import { prepared, type Queryable } from './queryable.js';
import { unrecallableSessions } from './recall-bounds.js';
import { databaseScopeSql } from './sql-scope.js';
import { visibleInSearch } from './turn-duplicates.js';
import { type UserSearchRequest, userCandidateSearch } from './user-search.js';

/**
 * Turns that are no question answered: failed calls, memory commands and incomplete streams. They are
 * never history, and never the original a question nearly repeats: a question asked again after one
 * of them must stay visible in search and as a similar turn.
 */
export const NOT_ASKED = sql`('upstream_error', 'memory_command', 'incomplete')`;

/**
 * The latest turns of a live session that can be an original (not NOT_ASKED), newest first: what a
 * new question is checked against for dedup. /memoryChat reads them with its retrieval instead.
 */
export async function recentQuestions(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  now: Date,
  limit: number,
): Promise<RecentQuestion[]> {
  const { rows } = await db.query<RecentQuestion>(
    toQuery(sql`SELECT t.turn_number, t.question, t.duplicate_of
     FROM turns t
     JOIN sessions s ON s.tenant_id = t.tenant_id AND s.user_id = t.user_id AND s.session_id = t.session_id
     WHERE t.tenant_id = ${identity.tenantId} AND t.user_id = ${identity.userId} AND t.session_id = ${sessionId}
       AND s.expires_at > ${now} AND t.status NOT IN ${NOT_ASKED}
     ORDER BY t.turn_number DESC LIMIT ${limit}`),
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
  /** Set when rows were cut before storage (MEMORY_STORE_RESULT_ROWS / _BYTES). */
  result_truncated: { rows_stored: number; rows_total: number | null } | null;
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
  const tenant = param(identity.tenantId);
  const user = param(identity.userId);
  const session = param(sessionId);
  const { condition, order } = lookupSql(lookup);
  const { rows } = await db.query<{ turn: Record<string, unknown> | null }>(
    toQuery(sql`SELECT to_jsonb(x) AS turn FROM sessions s
     LEFT JOIN LATERAL (
       SELECT t.turn_number, t.created_at, t.status, t.question, t.sql_query, t.query_explanation, t.tables_used,
              t.vdp_database_names, t.execution_result, t.metadata -> 'result_truncated' AS result_truncated,
              t.sql_query IS NOT NULL AS has_sql
       FROM turns t
       WHERE t.tenant_id = ${tenant} AND t.user_id = ${user} AND t.session_id = ${session} AND ${condition}
       ${order} LIMIT 1
     ) x ON TRUE
     WHERE s.tenant_id = ${tenant} AND s.user_id = ${user} AND s.session_id = ${session} AND s.expires_at > ${now}`),
  );
  const row = rows[0];
  if (!row) return { session: false };
  if (!row.turn) return { session: true };
  return {
    session: true,
    turn: { ...(row.turn as unknown as SqlTurn & { has_sql: boolean }), created_at: new Date(row.turn.created_at as string) },
  };
}

/**
 * Which turn a lookup means: a number, the latest whose question has every keyword, or a position
 * among turns with SQL.
 */
function lookupSql(lookup: SqlTurnLookup): { condition: SqlFragment; order: SqlFragment } {
  if ('number' in lookup) return { condition: sql`t.turn_number = ${lookup.number}`, order: sql`` };
  if ('keywords' in lookup) {
    return {
      condition: sql`t.sql_query IS NOT NULL AND t.question ILIKE ALL (${lookup.keywords}::text[])`,
      order: sql`ORDER BY t.turn_number DESC`,
    };
  }
  const order = {
    first: sql`ORDER BY t.turn_number ASC`,
    last: sql`ORDER BY t.turn_number DESC`,
    previous: sql`ORDER BY t.turn_number DESC OFFSET 1`,
  }[lookup.position];
  return { condition: sql`t.sql_query IS NOT NULL`, order };
}

export interface SearchRequest extends UserSearchRequest {
  now: Date;
  embedding: number[];
  sessionId?: string;
  scope: DatabaseScope;
}

export interface SearchHit extends Omit<HistoryTurn, 'messages'> {
  session_id: string;
  session_name: string;
  vdp_database_names: string[];
  feedback_rating: 'up' | 'down' | null;
  similarity: number;
}

/**
 * The caller's turns that best match a query (docs/design.md §9: exact per-user search), within the
 * database scope, in live sessions only, with one turn of each near-duplicate pair: the nearest by
 * cosine and the best lexical matches, fused by reciprocal rank as /memoryChat's retrieval does
 * (hybrid-rank.ts). The floor applies to the cosine; a lexical match passes it. Memory commands and
 * incomplete streams are not answers to search for (re-embedding may give them a vector).
 */
export async function searchTurns(db: Queryable, req: SearchRequest): Promise<SearchHit[]> {
  // One row per hit, each with what the path memory keeps (path-memory.ts); one row of NULL hit
  // columns when nothing is found.
  const distributed = await db.isDistributed?.();
  // Made first, the tenant and user are the statement's $1 and $2.
  const search = userCandidateSearch(req, { distributed });
  const { tenant, user } = search;
  const session = param(req.sessionId ?? null);
  const { hint, epoch } = search.path;
  const history = annHistory({ embeddingModel: req.embeddingModel, distributed });
  const { rows } = await db.query<SearchHit & { erase_epoch: string; ann_indexed: boolean; ann_turns: string | null }>(
    prepared(
      sql`WITH ${fusedCandidates({
        ...search,
        // Not from expired sessions, nor from sessions kept to themselves unless the search is of that session.
        where: sql`t.embedding IS NOT NULL AND t.session_id NOT IN (${unrecallableSessions(tenant, user, param(req.now), session)})
         AND (${session}::uuid IS NULL OR t.session_id = ${session}::uuid)
         AND ${databaseScopeSql(req.scope)} AND ${visibleInSearch(tenant, user)}
         AND t.status NOT IN ('memory_command', 'incomplete')`,
        columns: sql`t.created_at, t.status, t.question, t.answer, t.sql_query, t.tables_used, t.vdp_database_names, t.feedback_rating`,
      })}, found AS (
       SELECT * FROM fused WHERE usable ORDER BY score DESC, distance, session_id, turn_number LIMIT ${req.k}
     )
     SELECT p.erase_epoch, p.ann_indexed, p.ann_turns, f.session_id::text AS session_id,
            (SELECT s.session_name FROM sessions s
             WHERE s.tenant_id = ${tenant} AND s.user_id = ${user} AND s.session_id = f.session_id) AS session_name,
            f.turn_number, f.created_at, f.status, f.question, f.answer, f.sql_query, f.tables_used,
            f.vdp_database_names, f.feedback_rating, 1 - f.distance AS similarity
     FROM (SELECT ${epoch} AS erase_epoch, ${history.heavy} AS ann_indexed, ${history.turns} AS ann_turns) p
     LEFT JOIN found f ON true
     ORDER BY f.score DESC, f.distance, f.session_id, f.turn_number`,
      { genericPlan: hint.known !== undefined },
    ),
  );
  if (rows[0]) rememberPath(hint, rows[0].ann_indexed, Number(rows[0].erase_epoch), Number(rows[0].ann_turns));
  return rows
    .filter((r) => r.turn_number !== null)
    .map(({ erase_epoch: _epoch, ann_indexed: _indexed, ann_turns: _turns, ...hit }) => ({ ...hit, similarity: Number(hit.similarity) }));
}
