import pgvector from 'pgvector';
import type { DatabaseScope, Identity } from '../../services/core/identity.js';
import type { TurnStatus } from '../../services/providers/answerers/answerer.js';
import { SESSION_COLUMNS, sessionFromJson, type SessionRow } from './memory-store.js';
import type { Queryable } from './queryable.js';
import { databaseScopeSql } from './sql-scope.js';
import { visibleInSearchSql } from './turn-duplicates.js';

export interface ContextTurn {
  turn_number: number;
  created_at: Date;
  status: TurnStatus;
  question: string;
  answer: string;
  sql_query: string | null;
  tables_used: string[];
  messages: unknown;
}

export interface ContextMemory extends ContextTurn {
  session_id: string;
  similarity: number;
}

export interface ContextRetrievalRequest {
  identity: Identity;
  sessionId?: string;
  now: Date;
  /** MEMORY_MAX_TURNS_PER_SESSION */
  windowSize: number;
  k: number;
  minSimilarity: number;
  embedding: number[] | null;
  embeddingModel: string;
  scope: DatabaseScope;
}

export interface RetrievedContext {
  session?: SessionRow;
  /** Newest first; turns the summary covers are left out, it stands for them. */
  window: ContextTurn[];
  /** Most similar first. */
  memories: ContextMemory[];
}

const TURN_FIELDS = `t.turn_number, t.created_at, t.status, t.question, t.answer, t.sql_query, t.tables_used`;

/**
 * What `POST /memory/context` needs, in one round trip (as `retrieveMemory` for /memoryChat): the
 * session with its summary and slots, its window with message chains, and the user's similar turns.
 */
export async function retrieveContext(db: Queryable, req: ContextRetrievalRequest): Promise<RetrievedContext> {
  const params: unknown[] = [req.identity.tenantId, req.identity.userId, req.sessionId ?? null, req.now];
  const scope = databaseScopeSql(req.scope, params);
  params.push(req.windowSize, req.k, req.minSimilarity, req.embeddingModel, req.embedding ? pgvector.toSql(req.embedding) : null);
  const [windowP, kP, minP, modelP, vecP] = [4, 3, 2, 1, 0].map((back) => params.length - back);

  const { rows } = await db.query<{ source: 'session' | 'window' | 'memory'; row: Record<string, unknown> }>(
    `WITH sess AS (
       SELECT ${SESSION_COLUMNS} FROM sessions
       WHERE tenant_id = $1 AND user_id = $2 AND session_id = $3 AND expires_at > $4
     ), win AS (
       SELECT ${TURN_FIELDS}, t.messages
       FROM turns t, sess
       WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.session_id = $3
         AND t.turn_number > COALESCE(sess.summary_through_turn, 0)
         AND t.status <> 'upstream_error' AND ${scope}
       ORDER BY t.turn_number DESC LIMIT $${windowP}
     ), mem AS (
       SELECT * FROM (
         SELECT t.session_id, ${TURN_FIELDS}, NULL::jsonb AS messages, 1 - (t.embedding <=> $${vecP}::vector) AS similarity
         FROM turns t
         JOIN sessions s ON s.tenant_id = t.tenant_id AND s.user_id = t.user_id AND s.session_id = t.session_id
         WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.embedding_model = $${modelP}
           AND $${vecP}::vector IS NOT NULL AND s.expires_at > $4 AND t.status = 'ok' AND ${scope}
           AND ${visibleInSearchSql('t')}
           AND NOT EXISTS (SELECT 1 FROM win w WHERE t.session_id = $3 AND w.turn_number = t.turn_number)
         ORDER BY t.embedding <=> $${vecP}::vector
         LIMIT $${kP}
       ) nearest WHERE similarity >= $${minP}
     )
     SELECT 'session' AS source, to_jsonb(sess) AS row FROM sess
     UNION ALL SELECT 'window', to_jsonb(win) FROM win
     UNION ALL SELECT 'memory', to_jsonb(mem) FROM mem`,
    params,
  );

  const out: RetrievedContext = { window: [], memories: [] };
  for (const { source, row } of rows) {
    if (source === 'session') out.session = sessionFromJson(row);
    else if (source === 'window') out.window.push(turnFromJson(row));
    else out.memories.push({ ...turnFromJson(row), session_id: String(row.session_id), similarity: Number(row.similarity) });
  }
  out.window.sort((a, b) => b.turn_number - a.turn_number);
  out.memories.sort((a, b) => b.similarity - a.similarity);
  return out;
}

function turnFromJson(row: Record<string, unknown>): ContextTurn {
  return {
    turn_number: Number(row.turn_number),
    created_at: new Date(row.created_at as string),
    status: row.status as TurnStatus,
    question: String(row.question),
    answer: String(row.answer ?? ''),
    sql_query: (row.sql_query as string | null) ?? null,
    tables_used: (row.tables_used as string[] | null) ?? [],
    messages: row.messages ?? null,
  };
}
