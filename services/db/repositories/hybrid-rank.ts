import { type Param, param, type SqlFragment, sql } from '../sql.js';
import type { PathHint } from './path-memory.js';

/**
 * Similar turns are ranked twice, by cosine distance and by lexical match, and the two rankings fused
 * by reciprocal rank (each list's top FUSED_LIST_DEPTH; score = sum of 1 / (60 + rank)), as hybrid
 * search does (Cormack et al. 2009; Zep, Elasticsearch): ranks, unlike scores, compare across signals
 * and languages, where one absolute cosine floor does not. Used by /memoryChat's retrieval and by
 * /memory/search.
 */
export const FUSED_LIST_DEPTH = 20;
const RRF_RANK_CONSTANT = 60;
/** MEMORY_EXACT_SEARCH_MAX_TURNS's default, for callers (scripts, tests) that do not read config. */
const EXACT_SEARCH_MAX_TURNS = 2000;

/**
 * The embedding models whose vectors have an approximate (IVFFlat) index (migration 020): the function
 * that reads a user's nearest turns from it, and the index's name, whose row count (pg_class.reltuples)
 * and lists (its reloptions) the path is chosen by. Another model is searched exactly whatever a
 * user's history (docs/performance.md).
 */
export const ANN_INDEXES: ReadonlyMap<string, { nearest: SqlFragment; index: string; dimension: number }> = new Map([
  ['local-hash-v2@384', { nearest: sql`nearest_turns_local_hash_v2_384`, index: 'turns_ann_local_hash_v2_384', dimension: 384 }],
  [
    'text-embedding-3-small@1536',
    {
      nearest: sql`nearest_turns_text_embedding_3_small_1536`,
      index: 'turns_ann_text_embedding_3_small_1536',
      dimension: 1536,
    },
  ],
]);
/**
 * How many of the index's lists nearest the question the scan reads for a user who holds all of its
 * rows; a user holding a share of them gets IVF_PROBES / √share (their turns are spread over more
 * lists, among other users'). k-means draws the lists anew at each build, and recall moves with the
 * draw: recall@20 of the function against exact search for a 20,000-turn user, 300 questions (a third
 * about other databases than the user's, whose nearest turns lie spread over many lists: most of
 * what a scan misses), sixteen builds of √rows lists, 0.976-0.994 at 30 probes (four builds under
 * 0.98), 0.982-0.997 at 40; a 100,000-turn user, four builds, 0.989-0.994 and 0.994-0.997
 * (`npm run bench -- ann-recall --builds N`, docs/performance.md). At 40 the scan takes about 1.3x
 * its time at 30.
 */
const IVF_PROBES = 40;
/**
 * How many of the scan's nearest per candidate wanted the statement's conditions (scope, live
 * sessions, status) are checked on, each by one row lookup: they apply after the scan, so it keeps
 * more than `depth`.
 */
const ANN_OVERFETCH = 10;
/**
 * The lexical candidates come from the user's newest this-many turns of the model (whatever their
 * status or session: the same rows on either path, read newest first from turns_by_user_model_recency),
 * those of them the statement may recall: a bound on the turns matched and ranked whatever the
 * history (older turns are still found by vector). Matched over all of a 2,000-turn user's turns, the
 * lexical side was two thirds of their search (docs/performance.md, "A user's own history").
 */
const LEXICAL_WINDOW = 1000;
/**
 * The approximate path scores a user's turns not yet in the index (migration 017) exactly: taken only
 * while they are at most this many, i.e. once the appends after the user crossed the threshold marked
 * the rest (turn-append.ts, ANN_MARK_BATCH per append).
 */
const UNMARKED_EXACT_MAX = 200;
/**
 * How many exactly scored turns one row the IVFFlat scan reads costs. The scan reads `probes` lists of
 * about rows / lists rows each (the index holds the model's turns of every user past the threshold,
 * migration 017), where exact search reads the user's turns once (both paths take the same lexical
 * list): the approximate path is taken when turns >= ANN_ROW_COST * probes * rows / lists. At 2, the bench's
 * 2,200-turn user (47 lists) is searched exactly: through the index, at 20 probes, their search took
 * 10.9 ms against exact search's 8.2 (docs/performance.md, "A user's own history").
 */
export const ANN_ROW_COST = 2;

/**
 * A turn's lexical match with the question's terms (services/core/search-terms/lexical-terms.ts), over
 * turns aliased `t`: ts_rank of its weighted terms, scaled by the share of the turn's table terms
 * (weight A) that the question names, so a turn over exactly the tables a question names beats one
 * that also read others. 0 when nothing matches or its terms are not computed yet.
 */
export function lexicalMatch(query: Param, queryTerms: Param): SqlFragment {
  // Ranked only where a term matches: most of a user's turns share no term with a question, and
  // ranking them (ts_rank, ts_filter, ts_delete) cost more than their inner product.
  return sql`CASE WHEN t.search_terms @@ ${query}::tsquery THEN ${matchedRank(query, queryTerms, sql`ts_filter(t.search_terms, '{a}')`)} ELSE 0 END`;
}

/** lexicalMatch of a turn `t` known to match, whose table terms are `tables`. */
function matchedRank(query: Param, queryTerms: Param, tables: SqlFragment): SqlFragment {
  const named = sql`((length(${tables}) - length(ts_delete(${tables}, ${queryTerms}::text[])))::float8 / greatest(length(${tables}), 1))`;
  return sql`ts_rank(t.search_terms, ${query}::tsquery) * (1 + ${named}) / 2`;
}

/**
 * The lexical list: the rows of `window` (turns aliased `t` with `ref`, `distance` and `search_terms`)
 * that match the question, ranked by lexicalMatch, best `depth` first. Each matching row's table
 * terms are filtered out once (OFFSET 0 keeps the subquery from being flattened, which would put the
 * expression back in each of its three uses): 0.2 ms of a 2,000-turn user's search (docs/performance.md).
 */
function lexicalList(s: CandidateSearch, window: SqlFragment): SqlFragment {
  return sql`SELECT t.ref, t.distance, ${matchedRank(s.query, s.queryTerms, sql`t.table_terms`)} AS lexical
       FROM (SELECT t.ref, t.distance, t.search_terms, ts_filter(t.search_terms, '{a}') AS table_terms FROM (${window}) t
             WHERE ${s.query}::tsquery IS NOT NULL AND t.search_terms @@ ${s.query}::tsquery OFFSET 0) t
       ORDER BY lexical DESC, distance LIMIT ${s.depth}`;
}

export interface CandidateSearch {
  tenant: Param;
  user: Param;
  /** The question's embedding (vectorParam), or a NULL parameter: no candidates then. */
  vector: Param;
  embeddingModel: string;
  /** questionSearch's tsquery literal and terms, or NULL parameters. */
  query: Param;
  queryTerms: Param;
  depth: Param;
  minSimilarity: number;
  /**
   * MEMORY_EXACT_SEARCH_MAX_TURNS: up to this many turns of the model a user is searched exactly;
   * past it, the nearest come from the model's approximate index (when it has one).
   */
  exactSearchMaxTurns?: number;
  /**
   * ANN_ROW_COST (its default when absent); 0 takes the approximate path on MEMORY_EXACT_SEARCH_MAX_TURNS
   * alone (benches and tests that compare the two paths).
   */
  annRowCost?: number;
  /**
   * On a Citus coordinator every user is searched exactly: the statement runs on the user's shard,
   * where the nearest-turns function's own query on `turns` would be a distributed query from a
   * shard query, which Citus refuses (docs/scaling.md).
   */
  distributed?: boolean;
  /** Search exactly whatever the user's history (within one session the approximate path's nearest may lie elsewhere). */
  exactOnly?: boolean;
  /**
   * What the process knows of the user's path (path-memory.ts, pathHint), with the statement's
   * expression of their erasure epoch. Assumed light (below the threshold at their last search):
   * search exactly, in a statement without the approximate path's branches (planned and started on every
   * call, they cost the database more than a light user's search itself), and only tell whether the
   * user has crossed it since (annHistory). A known count (past the threshold a short while ago,
   * not erased since): decide on it without counting their sessions' turns again; the count runs
   * only when the epoch moved.
   */
  path?: { hint: PathHint; epoch: SqlFragment };
  /** Which of the user's turns `t` may be found, besides tenant, user and model. */
  where: SqlFragment;
  /** Columns of the found turn `t` that `fused` carries, e.g. sql`t.question, t.answer`. */
  columns: SqlFragment;
}

/**
 * The CTEs `nearest`, `matching`, `ranked` and `fused`: the `depth` nearest of the user's turns by
 * cosine and the `depth` best lexical matches, each list read as row references (ctid, valid within
 * the statement's snapshot) and distances only; then, among those candidates alone, one row per turn
 * with its fused `score`, `distance` (1 - cosine), `session_id`, `turn_number`, `search_terms`, the
 * requested `columns` of the turn, and `usable` when its cosine reaches `minSimilarity` or it matches
 * lexically (a lexical match passes the floor).
 *
 * A turn whose question has exactly the question's terms (the same question asked again, in another
 * session, whatever its punctuation, case or word order) scores 1 more, above any fused sum (at most
 * 2 / 61): its stored vector also holds its SQL and answer, and turns reading more of the tables
 * the question names outrank it lexically, so both lists may rank it below others; but no turn
 * tells the answerer more about this question than that one.
 */
export function fusedCandidates(s: CandidateSearch): SqlFragment {
  const own = sql`t.tenant_id = ${s.tenant} AND t.user_id = ${s.user}`;
  const max = s.exactSearchMaxTurns ?? EXACT_SEARCH_MAX_TURNS;
  const ann = s.exactOnly || s.distributed ? undefined : ANN_INDEXES.get(s.embeddingModel);
  const assumeLight = s.path?.hint.assumeLight ?? false;
  const known = s.path?.hint.known;
  const knownHeavy = s.path && known ? sql`${s.path.epoch} = ${param(known.epoch)}::bigint` : undefined;
  // Below the threshold (or for a model without an approximate index), every turn of the user is scored
  // once, by its inner product alone (1 - cosine for the unit vectors every embedder stores:
  // docs/design.md, Search), and both lists are taken from that: the nearest, and the newest
  // LEXICAL_WINDOW matched lexically. Scanning the user's turns once per list cost more than carrying
  // the keys; matching all of them lexically cost more than their inner products. A one-time filter
  // on each branch of `nearest` and `matching`, so only one of each runs.
  const exact = ann === undefined || assumeLight ? sql`TRUE` : sql`NOT (SELECT ann FROM history)`;
  const rowCost = s.annRowCost ?? ANN_ROW_COST;
  const scored = sql`scored AS (
       SELECT t.ctid AS ref, 1 + (t.embedding <#> ${s.vector}::vector) AS distance, t.created_at, t.search_terms
       FROM turns t
       WHERE ${own} AND t.embedding_model = ${s.embeddingModel} AND ${s.vector}::vector IS NOT NULL AND ${s.where}
     )`;
  const exactNearest = sql`SELECT t.ref, t.distance, ${lexicalMatch(s.query, s.queryTerms)} AS lexical
       FROM (SELECT ref, distance, search_terms FROM scored WHERE ${exact} ORDER BY distance LIMIT ${s.depth}) t`;
  // The scored turns from the window's oldest on: its creation time read from the index (ties at it
  // are cut by LIMIT), once the user's sessions hold more turns than the window (history's count, of
  // every model: at least this one's). Sorting the scored turns by creation to find it cost a
  // 2,000-turn user's search 0.7 ms; reading it for every user cost a 100-turn user's 0.02 ms
  // (docs/performance.md).
  const oldest = sql`coalesce((SELECT c.created_at FROM turns c WHERE c.tenant_id = ${s.tenant} AND c.user_id = ${s.user}
           AND c.embedding_model = ${s.embeddingModel} ORDER BY c.created_at DESC OFFSET ${LEXICAL_WINDOW - 1} LIMIT 1), '-infinity')`;
  const windowStart =
    ann === undefined ? oldest : sql`CASE WHEN (SELECT turns FROM history) > ${LEXICAL_WINDOW} THEN ${oldest} ELSE '-infinity' END`;
  const exactMatching = lexicalList(
    s,
    sql`SELECT ref, distance, search_terms FROM scored WHERE ${exact} AND created_at >= ${windowStart} LIMIT ${LEXICAL_WINDOW}`,
  );
  // Past the threshold, the user's newest turns read through turns_by_user_model_recency and scored
  // here, so that its cost does not grow with their history.
  const annMatching = lexicalList(
    s,
    sql`SELECT t.ref, 1 + (t.embedding <#> ${s.vector}::vector) AS distance, t.search_terms
       FROM (SELECT t.ctid AS ref, t.* FROM turns t WHERE ${own} AND t.embedding_model = ${s.embeddingModel}
             ORDER BY t.created_at DESC LIMIT ${LEXICAL_WINDOW}) t
       WHERE (SELECT ann FROM history) AND ${s.vector}::vector IS NOT NULL AND ${s.where}`,
  );
  if (ann === undefined) {
    return sql`${scored}, nearest AS (
       ${exactNearest}
     ), matching AS (
       ${exactMatching}
     ), ${fusion(s)}`;
  }
  // Whether the approximate path pays for this user: more than `max` turns, as their sessions count
  // them (all models), and a scan of fewer of the index's rows than their turns (ANN_ROW_COST). The
  // index's row count and lists are the planner's (kept by VACUUM, ANALYZE and each build; with a row
  // count of 0, never counted, the turn count alone decides). A hint for the path only (both return
  // the nearest turns), read in a few rows where counting the turns themselves read them all:
  // sessions are summed up to as many as the decision needs turns.
  // No row when the index is missing (dropped by hand or by a bench's load): 0 rows, NULL lists.
  const index = sql`SELECT greatest(coalesce(c.reltuples, 0), 0)::float8 AS rows,
                 CASE WHEN c.oid IS NOT NULL THEN coalesce((SELECT o.option_value::float8 FROM pg_options_to_table(c.reloptions) o
                                                           WHERE o.option_name = 'lists'), 100) END AS lists
          FROM (SELECT) one LEFT JOIN pg_class c ON c.oid = to_regclass(${ann.index})`;
  // The scan reads probes * rows / lists rows, probes = IVF_PROBES * sqrt(rows / turns) (at most
  // every list; least() skips a NULL): the least turns that pay are at most
  // rows * (cost * IVF_PROBES / lists)^(2/3), and as many sessions hold at least as many turns.
  // With no row cost every user past the threshold takes the path, and the probes for their share
  // need the whole count: cut at the threshold, it gave every such user all of the lists.
  const needed =
    rowCost === 0
      ? sql`NULL::bigint`
      : sql`greatest(${max + 1}, ceil(i.rows * power(${rowCost}::float8 * ${IVF_PROBES} / greatest(i.lists, 1), 2.0 / 3)))::bigint`;
  const counted = sql`(SELECT coalesce(sum(x.turn_count), 0) FROM (SELECT x.turn_count FROM sessions x
             WHERE x.tenant_id = ${s.tenant} AND x.user_id = ${s.user} LIMIT ${needed}) x)`;
  // Under a known epoch the count is an initplan: it runs only when CASE reaches it. OFFSET 0 keeps the
  // planner from pulling the CASE up into `history`, which reads it twice (and would count twice).
  const turns = knownHeavy ? sql`CASE WHEN ${knownHeavy} THEN ${param(known!.turns)}::bigint ELSE ${counted} END` : counted;
  const probes = sql`least(i.lists, ceil(${IVF_PROBES} * sqrt(greatest(i.rows / greatest(x.turns, 1), 1))))`;
  const pays = rowCost === 0 ? sql`true` : sql`x.turns >= ${rowCost}::float8 * ${probes} * i.rows / greatest(i.lists, 1)`;
  const heavy = sql`SELECT x.turns, x.turns > ${max} AND ${pays} AS heavy,
              ${probes}::integer AS probes
       FROM (${index}) i CROSS JOIN LATERAL (SELECT ${turns} AS turns OFFSET 0) x`;
  if (assumeLight) {
    return sql`history AS (
       ${heavy}
     ), ${scored}, nearest AS (
       ${exactNearest}
     ), matching AS (
       ${exactMatching}
     ), ${fusion(s)}`;
  }
  return sql`history AS (
       SELECT x.turns, x.heavy, x.probes, CASE WHEN x.heavy THEN (SELECT count(*) FROM (SELECT FROM turns u WHERE u.tenant_id = ${s.tenant}
                 AND u.user_id = ${s.user} AND u.embedding_model = ${s.embeddingModel} AND NOT u.ann_indexed
                 LIMIT ${UNMARKED_EXACT_MAX + 1}) u) <= ${UNMARKED_EXACT_MAX} ELSE false END AS ann
       FROM (${heavy}) x
     ), ${scored}, nearest AS (
       (${exactNearest})
       UNION ALL
       (${annNearest(s, ann.nearest)})
     ), matching AS (
       (${exactMatching})
       UNION ALL
       (${annMatching})
     ), ${fusion(s)}`;
}

/**
 * The CTEs `ranked` and `fused` over `nearest` and `matching` (ref, distance, lexical). Each candidate's
 * lexical match comes with it from the list that scored it (the same function of the same row in
 * both lists): computing it again per candidate here cost more than carrying it.
 */
function fusion(s: CandidateSearch): SqlFragment {
  return sql`ranked AS (
       SELECT ref, distance, lexical, row_number() OVER (ORDER BY distance) AS r FROM nearest
       UNION ALL
       SELECT ref, distance, lexical, row_number() OVER (ORDER BY lexical DESC, distance) AS r FROM matching
     ), fused AS (
       SELECT t.session_id, t.turn_number, f.distance, t.search_terms, ${s.columns},
              f.rrf + CASE WHEN f.lexical > 0
                            AND strip(ts_filter(t.search_terms, '{c}')) = array_to_tsvector(${s.queryTerms}::text[])
                           THEN 1 ELSE 0 END AS score,
              1 - f.distance >= ${s.minSimilarity} OR f.lexical > 0 AS usable
       FROM (SELECT ref, min(distance) AS distance, max(lexical) AS lexical, sum(1.0 / (${RRF_RANK_CONSTANT} + r)) AS rrf
             FROM ranked GROUP BY ref) f
       ${byRef(s, sql`f`)}
     )`;
}

/**
 * The turn `t` that each row of `list` refers to (its `ref`), read by row reference, once per row:
 * without statistics, a join (on the primary key or the reference) was planned as a scan of all of
 * the user's turns (a hash join, or an index on the user's turns with the rest as a filter). LIMIT
 * keeps the subquery from being flattened into such a join; a TID scan reads the one row.
 */
function byRef(s: CandidateSearch, list: SqlFragment): SqlFragment {
  return sql`CROSS JOIN LATERAL (SELECT * FROM turns t
         WHERE t.ctid = ${list}.ref AND t.tenant_id = ${s.tenant} AND t.user_id = ${s.user} LIMIT 1) t`;
}

/**
 * The nearest of a heavy user's turns: those in the model's approximate index (migration 020's function; the
 * scan's nearest ANN_OVERFETCH per candidate), and those not yet in it (migration 017: a user's turns
 * enter it once the approximate path serves them) scored exactly through turns_not_ann_indexed; then the
 * statement's conditions on them, read by reference nearest first (the subquery's order) until `depth`
 * pass: reading and checking all of them before sorting cost a 100,000-turn user 1.8 ms.
 */
function annNearest(s: CandidateSearch, ann: SqlFragment): SqlFragment {
  const heavy = sql`(SELECT ann FROM history)`;
  return sql`SELECT a.ref, a.distance, ${lexicalMatch(s.query, s.queryTerms)} AS lexical
       FROM (SELECT * FROM ((SELECT n.ref, n.distance FROM ${ann}(${s.tenant}, ${s.user}, ${s.vector}::vector,
                ${s.depth}::integer * ${ANN_OVERFETCH}, (SELECT probes FROM history)) n
              WHERE ${heavy})
             UNION ALL
             SELECT u.ctid, 1 + (u.embedding <#> ${s.vector}::vector) FROM turns u
             WHERE u.tenant_id = ${s.tenant} AND u.user_id = ${s.user} AND u.embedding_model = ${s.embeddingModel}
               AND NOT u.ann_indexed AND ${heavy}) a ORDER BY a.distance) a
       ${byRef(s, sql`a`)}
       WHERE ${heavy} AND ${s.vector}::vector IS NOT NULL AND ${s.where}
       ORDER BY a.distance LIMIT ${s.depth}`;
}

/**
 * What the statement of `fusedCandidates(s)` found of the user's path: `heavy`, whether their turns
 * belong in the model's approximate index (past the threshold, where the index pays), for the append
 * that follows to mark them (turn-append.ts, appendTurn); `turns`, the count it took the decision on,
 * for the process to remember (path-memory.ts). NULL turns where no count is made.
 */
export function annHistory(s: Pick<CandidateSearch, 'embeddingModel' | 'exactOnly' | 'distributed'>): {
  heavy: SqlFragment;
  turns: SqlFragment;
} {
  return !s.exactOnly && !s.distributed && ANN_INDEXES.has(s.embeddingModel)
    ? { heavy: sql`(SELECT heavy FROM history)`, turns: sql`(SELECT turns FROM history)` }
    : { heavy: sql`false`, turns: sql`NULL::bigint` };
}
