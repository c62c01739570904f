import type { Identity } from '../../model/identity.js';
import type { MemoryScope, SessionRow } from '../../model/sessions.js';
import type { TurnStatus } from '../../model/turns.js';
import { type Param, param, type SqlFragment, sql, toQuery } from '../sql.js';
import type { Queryable } from './queryable.js';
import { SESSION_COLUMNS, sessionFromJson } from './session-row.js';

/**
 * Sessions of the memory API (docs/design.md §6). Every statement is scoped by (tenant, user) and sees
 * only live sessions (`expires_at > now`), so an expired session is gone before any cleanup runs.
 */

export interface Retention {
  now: Date;
  ttlMs: number;
  ttlMode: 'sliding' | 'absolute';
}

/** The `expires_at` a write sets: extended in sliding mode, fixed at creation in absolute mode. */
export function expiresAfterWrite(retention: Retention, now: ReturnType<typeof param>): SqlFragment {
  const ttlFromNow = sql`${now}::timestamptz + ${retention.ttlMs}::float8 * interval '1 millisecond'`;
  // LEAST keeps an absolute expiry (and types the TTL parameter, which Postgres requires).
  return retention.ttlMode === 'sliding' ? ttlFromNow : sql`LEAST(expires_at, ${ttlFromNow})`;
}

export interface SessionPageCursor {
  /** updated_at as Postgres wrote it (microseconds kept), and the tie-breaking id. */
  updatedAt: string;
  sessionId: string;
}

/** Newest first by last activity; `cursor` continues after the last session of the previous page. */
export async function listSessions(
  db: Queryable,
  identity: Identity,
  now: Date,
  limit: number,
  cursor?: SessionPageCursor,
  key?: string,
): Promise<{ sessions: SessionRow[]; next?: SessionPageCursor }> {
  const { rows } = await db.query<Record<string, unknown> & { updated_at_text: string }>(
    toQuery(sql`SELECT ${SESSION_COLUMNS}, updated_at::text AS updated_at_text FROM sessions
     WHERE tenant_id = ${identity.tenantId} AND user_id = ${identity.userId} AND expires_at > ${now}
       AND ${cursor ? sql`(updated_at, session_id) < (${cursor.updatedAt}::timestamptz, ${cursor.sessionId}::uuid)` : sql`TRUE`}
       AND ${key === undefined ? sql`TRUE` : sql`session_key = ${key}`}
     ORDER BY updated_at DESC, session_id DESC
     LIMIT ${limit + 1}`),
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    sessions: page.map(sessionFromJson),
    next: rows.length > limit && last ? { updatedAt: last.updated_at_text, sessionId: String(last.session_id) } : undefined,
  };
}

export interface StoredTurn {
  turn_number: number;
  created_at: Date;
  status: TurnStatus;
  question: string;
  answer: string;
  sql_query: string | null;
  query_explanation: string | null;
  tables_used: string[];
  vdp_database_names: string[];
  execution_result: unknown;
  messages: unknown;
  context: Record<string, unknown> | null;
  metadata: Record<string, unknown>;
  duplicate_of: number | null;
  vdp_tag_names: string[];
  feedback_rating: 'up' | 'down' | null;
  feedback_comment: string | null;
  feedback_at: string | null;
  tokens: unknown;
  memory_retrieval_ms: number | null;
  answerer_ms: number | null;
  total_ms: number | null;
}

/** What a stored turn is shown with (GET /sessions/{id}, turn corrections): every column but the vector. */
export const STORED_TURN_COLUMNS = sql`turn_number, created_at, status, question, answer, sql_query, query_explanation, tables_used,
  vdp_database_names, execution_result, messages, context, metadata, duplicate_of, vdp_tag_names,
  feedback_rating, feedback_comment, feedback_at, tokens, memory_retrieval_ms, answerer_ms, total_ms`;

/** The live session and all its stored turns, oldest first, in one round trip. */
export async function getSessionWithTurns(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  now: Date,
): Promise<{ session: SessionRow; turns: StoredTurn[] } | undefined> {
  const tenant = param(identity.tenantId);
  const user = param(identity.userId);
  const session = param(sessionId);
  const { rows } = await db.query<{ session: Record<string, unknown>; turns: Record<string, unknown>[] }>(
    toQuery(sql`WITH s AS (
       SELECT ${SESSION_COLUMNS} FROM sessions
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${session} AND expires_at > ${now}
     )
     SELECT to_jsonb(s) AS session,
       (SELECT COALESCE(jsonb_agg(to_jsonb(x) ORDER BY x.turn_number), '[]'::jsonb) FROM (
          SELECT ${STORED_TURN_COLUMNS}
          FROM turns WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${session}) x) AS turns
     FROM s`),
  );
  const row = rows[0];
  if (!row) return undefined;
  return { session: sessionFromJson(row.session), turns: row.turns.map(storedTurnFromJson) };
}

export function storedTurnFromJson(t: Record<string, unknown>): StoredTurn {
  return { ...(t as unknown as StoredTurn), created_at: new Date(t.created_at as string) };
}

/** What PATCH /sessions/{id} changes: its name, its stored memory scope (null: back to the default), or both. */
export interface SessionChanges {
  name?: string;
  memoryScope?: MemoryScope | null;
}

export async function updateSession(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  changes: SessionChanges,
  retention: Retention,
): Promise<SessionRow | undefined> {
  const now = param(retention.now);
  const scope = changes.memoryScope === undefined ? sql`memory_scope` : sql`${changes.memoryScope}::text`;
  const { rows } = await db.query<Record<string, unknown>>(
    toQuery(sql`UPDATE sessions SET session_name = COALESCE(${changes.name ?? null}::text, session_name), memory_scope = ${scope},
       updated_at = ${now}, expires_at = ${expiresAfterWrite(retention, now)}
     WHERE tenant_id = ${identity.tenantId} AND user_id = ${identity.userId} AND session_id = ${sessionId} AND expires_at > ${now}
     RETURNING ${SESSION_COLUMNS}`),
  );
  return rows[0] ? sessionFromJson(rows[0]) : undefined;
}

/** Deletes a live session and (by cascade) its turns; false when there was none to delete. */
export async function deleteSession(db: Queryable, identity: Identity, sessionId: string, now: Date): Promise<boolean> {
  const tenant = param(identity.tenantId);
  const user = param(identity.userId);
  const { rows } = await db.query<{ session_id: string }>(
    toQuery(sql`WITH s AS (
       DELETE FROM sessions WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${sessionId} AND expires_at > ${now}
       RETURNING session_id
     ), replies AS (${storedRepliesOf(tenant, user, sql`(SELECT s.session_id::text FROM s)`)})
     SELECT session_id FROM s`),
  );
  return rows.length > 0;
}

/**
 * The Idempotency-Key replies stored for requests that wrote into a session (`/memoryChat` names it
 * `conversation_metadata.conversation_id`, a turn write `session.session_id`), deleted with what they
 * quote: a replay after the session was forgotten or deleted must not hand back its questions and
 * answers. Claims still running are left to their request.
 */
function storedRepliesOf(tenant: Param, user: Param, sessionIdText: SqlFragment): SqlFragment {
  return sql`DELETE FROM idempotency_keys k
    WHERE k.tenant_id = ${tenant} AND k.user_id = ${user} AND k.status = 'completed'
      AND (k.response_body->'conversation_metadata'->>'conversation_id' = ${sessionIdText}
           OR k.response_body->'session'->>'session_id' = ${sessionIdText})`;
}

/** What a forgotten session is called when its name was its first question. */
export const FORGOTTEN_SESSION_NAME = 'Forgotten conversation';

/**
 * Whether the session (`sessions`) is named after its first question, as newSessionName names a new
 * session without session_name: the question, trimmed, or its start cut with "…". A name the client
 * chose (session_name, PATCH) is kept.
 */
function namedByFirstQuestion(tenant: Param, user: Param): SqlFragment {
  return sql`EXISTS (SELECT 1 FROM (
      SELECT btrim(f.question) AS q FROM turns f
      WHERE f.tenant_id = ${tenant} AND f.user_id = ${user} AND f.session_id = sessions.session_id
      ORDER BY f.turn_number LIMIT 1) first
    WHERE first.q = sessions.session_name
       OR (right(sessions.session_name, 1) = '…' AND starts_with(first.q, left(sessions.session_name, -1))))`;
}

/**
 * Forgets the turns, their summary, the carried slots, a name taken from the first question and the
 * replies stored under Idempotency-Keys, but keeps the session; turn numbers keep growing, so a number
 * never names two different turns.
 */
export async function clearSession(
  db: Queryable,
  identity: Identity,
  sessionId: string,
  retention: Retention,
): Promise<SessionRow | undefined> {
  const tenant = param(identity.tenantId);
  const user = param(identity.userId);
  const now = param(retention.now);
  const { rows } = await db.query<{ session: Record<string, unknown> }>(
    toQuery(sql`WITH s AS (
       UPDATE sessions SET turn_count = 0, summary_text = NULL, summary_through_turn = NULL, slots = '{}'::jsonb,
              session_name = CASE WHEN ${namedByFirstQuestion(tenant, user)} THEN ${FORGOTTEN_SESSION_NAME} ELSE session_name END,
              updated_at = ${now}, expires_at = ${expiresAfterWrite(retention, now)}
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${sessionId} AND expires_at > ${now}
       RETURNING ${SESSION_COLUMNS}
     ), gone AS (
       DELETE FROM turns t USING s
       WHERE t.tenant_id = ${tenant} AND t.user_id = ${user} AND t.session_id = s.session_id
     ), replies AS (${storedRepliesOf(tenant, user, sql`(SELECT s.session_id::text FROM s)`)})
     SELECT to_jsonb(s) AS session FROM s`),
  );
  return rows[0] ? sessionFromJson(rows[0].session) : undefined;
}
