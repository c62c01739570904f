import type { DatabaseScope, Identity } from '../../model/identity.js';
import type { MemoryScope, SessionRow } from '../../model/sessions.js';
import type { HistoryTurn, RecentQuestion, SimilarTurn, TurnStatus } from '../../model/turns.js';
import { type Param, param, type SqlFragment, sql, toQuery } from '../sql.js';
import { annHistory, fusedCandidates } from './hybrid-rank.js';
import { rememberPath } from './path-memory.js';
import { prepared, type Queryable } from './queryable.js';
import { sameAnswerer, unrecallableSessions } from './recall-bounds.js';
import { SESSION_COLUMNS, sessionFromJson } from './session-row.js';
import { databaseScopeSql, isBounded } from './sql-scope.js';
import { visibleInSearch } from './turn-duplicates.js';
import { NOT_ASKED } from './turns.js';
import { type UserSearchRequest, userCandidateSearch } from './user-search.js';
import { type PairExample, type PairRecall, pairCandidates, pairFromJson } from './verified-pairs.js';

export interface RetrievalRequest extends UserSearchRequest {
  /** Resume this session; absent for a new one. */
  sessionId?: string;
  now: Date;
  windowSize: number;
  scope: DatabaseScope;
  /** Also read the window turns' message chains (the memory API replays them). */
  withMessages?: boolean;
  /** Also read up to this many of the session's latest questions, as recentQuestions does (for dedup). */
  recentQuestions?: number;
  /**
   * The request's memory scope; without one, the session's stored one, else `user`. With `session`,
   * similar turns come from this session only: no cross-session recall.
   */
  memoryScope?: MemoryScope;
  /** Similar turns only of this answerer, or of none (turns a client stored): recall bounded by answerer. */
  answerer?: string;
  /** Also read the tenant's verified pairs nearest the question, within the same bounds (docs/verified-pairs.md). */
  verifiedPairs?: PairRecall;
  /**
   * Read at most this many characters of each window and similar turn's answer, for a caller that
   * renders no more of them: a long answer is not read whole 20 times a question. Whole when absent.
   */
  answerChars?: number;
}

export interface Retrieved {
  /** Undefined when `sessionId` was given but is not the caller's live session. */
  session?: SessionRow;
  /**
   * The session's summary and slots as far as the request's database bounds allow: a summary that
   * covers a turn outside them is not used (and the window then reaches back past it), and slots
   * come only from turns within them.
   */
  summary: string | null;
  slots: Record<string, unknown>;
  /** Newest first. */
  window: HistoryTurn[];
  /**
   * Most similar first, with the fused score they were ranked by (hybrid-rank.ts) and the stored terms
   * the statement groups them by (their weight-D lexemes; null while not computed).
   */
  similar: (SimilarTurn & { score: number; table_terms: string[] | null })[];
  /** The session's latest questions, newest first, when `recentQuestions` asked for them. */
  recent: RecentQuestion[];
  /** The tenant's verified pairs nearest the question, best first, when `verifiedPairs` asked for them. */
  pairs: PairExample[];
  /**
   * The user's erasure epoch (migration 011), read by the same statement: a request's first read,
   * which its turn's store compares with (store-turn.ts).
   */
  eraseEpoch: number;
  /**
   * The user is past the threshold where the model's approximate index pays (hybrid-rank.ts, annHistory): the
   * turn the request stores goes into the index, with a batch of the user's older turns (appendTurn).
   */
  annIndexed: boolean;
}

/**
 * Everything a new question needs from memory, in one round trip: the session (when resuming),
 * its recent turns not yet folded into its summary (upstream failures, memory commands and incomplete
 * streams are never history; a down-rated turn shows without its SQL), and the user's most similar
 * other turns of the active embedding model (answered turns only, never down-rated ones).
 */
export async function retrieveMemory(db: Queryable, req: RetrievalRequest): Promise<Retrieved> {
  const exactOnly = req.memoryScope === 'session';
  const distributed = await db.isDistributed?.();
  // Made first, the tenant and user are the statement's $1 and $2.
  const search = userCandidateSearch(req, { distributed, exactOnly });
  const { tenant, user } = search;
  const session = param(req.sessionId ?? null);
  const now = param(req.now);
  const scope = databaseScopeSql(req.scope);
  const bounded = isBounded(req.scope);
  const { hint, epoch } = search.path;
  const history = annHistory({ embeddingModel: req.embeddingModel, exactOnly, distributed });
  const answer = req.answerChars === undefined ? sql`t.answer` : answerCut(param(req.answerChars));
  const pairSearch =
    req.verifiedPairs && req.embedding
      ? pairCandidates({ ...search, scope, answerer: sameAnswerer(param(req.answerer ?? null)), recall: req.verifiedPairs })
      : undefined;

  const { rows } = await db.query<{ source: 'session' | 'window' | 'similar' | 'recent' | 'pair' | 'epoch'; row: Record<string, unknown> }>(
    prepared(
      sql`WITH sess AS (
       SELECT ${SESSION_COLUMNS},
              ${bounded ? summaryWithin(scope, tenant, user, session) : sql`summary_text`} AS usable_summary,
              ${bounded ? slotsWithin(scope, tenant, user, session) : sql`slots`} AS usable_slots
       FROM sessions
       WHERE tenant_id = ${tenant} AND user_id = ${user} AND session_id = ${session} AND expires_at > ${now}
     ), win AS (
       -- Read only when the session is found, and then from its own turns: joined to the session's
       -- row, without statistics (the embedded database), the plan read all of the user's turns
       -- through turns_by_user_model_recency and filtered them by session (583 of a 20,000-turn
       -- user's 794 ms: docs/performance.md). LIMIT keeps the subquery a loop over \`sess\`.
       SELECT w.* FROM sess CROSS JOIN LATERAL (
         SELECT t.turn_number, t.status, t.question, ${answer},
                CASE WHEN t.feedback_rating = 'down' THEN NULL ELSE t.sql_query END AS sql_query, t.tables_used, t.created_at,
                t.metadata -> 'asks_clarification' AS asks_clarification,
                ${req.withMessages ? sql`t.messages` : sql`NULL::jsonb AS messages`}
         FROM turns t
         WHERE t.tenant_id = ${tenant} AND t.user_id = ${user} AND t.session_id = ${session}
           AND t.turn_number > CASE WHEN sess.usable_summary IS NULL THEN 0 ELSE sess.summary_through_turn END
           AND t.status NOT IN ${NOT_ASKED} AND ${scope}
         ORDER BY t.turn_number DESC LIMIT ${req.windowSize}) w
     ), recent AS (
       SELECT r.* FROM sess CROSS JOIN LATERAL (
         SELECT t.turn_number, t.question, t.duplicate_of
         FROM turns t
         WHERE t.tenant_id = ${tenant} AND t.user_id = ${user} AND t.session_id = ${session}
           AND t.status NOT IN ${NOT_ASKED}
         ORDER BY t.turn_number DESC LIMIT ${req.recentQuestions ?? 0}) r
     ), unrecallable AS (
       ${unrecallableSessions(tenant, user, now, session)}
     ), ${fusedCandidates({
       ...search,
       where: sql`t.status = 'ok' AND t.feedback_rating IS DISTINCT FROM 'down' AND ${scope}
         AND t.session_id NOT IN (SELECT u.session_id FROM unrecallable u)
         AND ${visibleInSearch(tenant, user)}
         AND (t.session_id IS DISTINCT FROM ${session}::uuid OR t.turn_number NOT IN (SELECT w.turn_number FROM win w))
         AND (COALESCE(${param(req.memoryScope ?? null)}::text, (SELECT sess.memory_scope FROM sess), 'user') = 'user'
              OR t.session_id = ${session}::uuid)
         AND ${sameAnswerer(param(req.answerer ?? null))}`,
       columns: sql`t.status, t.question, ${answer}, t.sql_query, t.tables_used, t.created_at`,
     })}, sim AS (
       -- The best turn of each set of tables (their whole names, weight D: lexical-terms.ts) first:
       -- three turns over one table tell the answerer less than the best turns over three.
       SELECT session_id, turn_number, status, question, answer, sql_query, tables_used, created_at,
              1 - distance AS similarity, score, tsvector_to_array(ts_filter(search_terms, '{d}')) AS table_terms
       FROM (SELECT *, row_number() OVER (PARTITION BY strip(ts_filter(search_terms, '{d}')) ORDER BY score DESC, distance) AS nth
             FROM fused WHERE usable) grouped
       ORDER BY nth, score DESC, distance, session_id, turn_number
       LIMIT ${req.k}
     )${pairSearch ? sql`, pairs AS (${pairSearch})` : sql``}
     SELECT 'session' AS source, to_json(sess) AS row FROM sess
     UNION ALL SELECT 'window', to_json(win) FROM win
     UNION ALL SELECT 'similar', to_json(sim) FROM sim
     UNION ALL SELECT 'recent', to_json(recent) FROM recent
     ${pairSearch ? sql`UNION ALL SELECT 'pair', to_json(pairs) FROM pairs` : sql``}
     UNION ALL SELECT 'epoch', json_build_object('epoch', ${epoch},
       'ann_indexed', ${history.heavy}, 'ann_turns', ${history.turns})`,
      // A user known past the threshold: the plan reads the approximate path whatever the values. Left to
      // choose, Postgres planned it anew on every call for a 100,000-turn user (2.4 ms of planning
      // against 7.7 of execution, the generic plan's 7.6: EXPLAIN, docs/performance.md). Without an
      // embedding (k = 0, or the embedder failed) the search's one-time filters end it at once, but
      // a plan made for a NULL vector leaves the search out, so it always looked cheaper than the
      // generic one and Postgres planned the whole statement on every call: 2.7 against 0.5 ms of
      // database CPU a call (docs/performance.md, "Without an embedding").
      { genericPlan: hint.known !== undefined || !req.embedding, onUserShard: true },
    ),
  );

  const out: Retrieved = { window: [], similar: [], recent: [], pairs: [], summary: null, slots: {}, eraseEpoch: 0, annIndexed: false };
  const similar: { turn: SimilarTurn; score: number; tableTerms: string[] | null }[] = [];
  const pairs: { pair: PairExample; rank: number }[] = [];
  for (const { source, row } of rows) {
    if (source === 'session') {
      out.session = sessionFromJson(row);
      out.summary = (row.usable_summary as string | null) ?? null;
      out.slots = (row.usable_slots as Record<string, unknown> | null) ?? {};
    } else if (source === 'window') out.window.push(turnFromJson(row));
    else if (source === 'recent') out.recent.push(row as unknown as RecentQuestion);
    else if (source === 'pair') pairs.push({ pair: pairFromJson(row), rank: Number(row.rank) });
    else if (source === 'epoch') {
      out.eraseEpoch = Number(row.epoch);
      out.annIndexed = row.ann_indexed === true;
      if (!exactOnly) rememberPath(hint, out.annIndexed, out.eraseEpoch, Number(row.ann_turns));
    } else {
      similar.push({
        turn: { ...turnFromJson(row), session_id: String(row.session_id), similarity: Number(row.similarity) },
        score: Number(row.score),
        tableTerms: (row.table_terms as string[] | null) ?? null,
      });
    }
  }
  out.window.sort((a, b) => b.turn_number - a.turn_number);
  out.recent.sort((a, b) => b.turn_number - a.turn_number);
  out.pairs = pairs.sort((a, b) => a.rank - b.rank).map((p) => p.pair);
  out.similar = similar.sort((a, b) => b.score - a.score).map((s) => ({ ...s.turn, score: s.score, table_terms: s.tableTerms }));
  return out;
}

/**
 * A turn `t`'s answer cut to `chars` characters, named `answer`. One of no more bytes than that is sent
 * as it is: left() counts characters, reading the whole text, and most answers are that short
 * (docs/performance.md, "What each part of the retrieval costs").
 */
function answerCut(chars: Param): SqlFragment {
  return sql`CASE WHEN octet_length(t.answer) <= ${chars}::int THEN t.answer ELSE left(t.answer, ${chars}::int) END AS answer`;
}

/**
 * The session's summary when every turn it covers lies within the bounds (`scope`, over `t`), else NULL.
 * Runs inside the `sess` CTE, whose FROM is `sessions`.
 */
function summaryWithin(scope: SqlFragment, tenant: Param, user: Param, session: Param): SqlFragment {
  return sql`CASE WHEN NOT EXISTS (
      SELECT 1 FROM turns t
      WHERE t.tenant_id = ${tenant} AND t.user_id = ${user} AND t.session_id = ${session}
        AND t.turn_number <= sessions.summary_through_turn AND NOT (${scope}))
    THEN summary_text END`;
}

/**
 * The slots as the turns within the bounds set them: per key, the value of the latest such turn that
 * names it, nulls removed, as the session's own slots are merged at write time (appendTurn).
 */
function slotsWithin(scope: SqlFragment, tenant: Param, user: Param, session: Param): SqlFragment {
  return sql`(SELECT COALESCE(jsonb_strip_nulls(jsonb_object_agg(latest.key, latest.value)), '{}'::jsonb)
     FROM (SELECT DISTINCT ON (kv.key) kv.key, kv.value
           FROM turns t, jsonb_each(t.context) kv
           WHERE t.tenant_id = ${tenant} AND t.user_id = ${user} AND t.session_id = ${session}
             AND jsonb_typeof(t.context) = 'object' AND ${scope}
           ORDER BY kv.key, t.turn_number DESC) latest)`;
}

/** The caller's live session, or undefined: another user's or an expired session is not found. */
export async function findLiveSession(db: Queryable, identity: Identity, sessionId: string, now: Date) {
  const { rows } = await db.query<SessionRow>(
    toQuery(sql`SELECT ${SESSION_COLUMNS} FROM sessions
     WHERE tenant_id = ${identity.tenantId} AND user_id = ${identity.userId} AND session_id = ${sessionId} AND expires_at > ${now}`),
  );
  return rows[0];
}

function turnFromJson(row: Record<string, unknown>): HistoryTurn {
  return {
    turn_number: Number(row.turn_number),
    status: row.status as TurnStatus,
    question: String(row.question),
    answer: String(row.answer ?? ''),
    sql_query: (row.sql_query as string | null) ?? null,
    tables_used: (row.tables_used as string[] | null) ?? [],
    created_at: new Date(row.created_at as string),
    ...(row.asks_clarification === true ? { asks_clarification: true } : {}),
    ...(row.messages ? { messages: row.messages } : {}),
  };
}
