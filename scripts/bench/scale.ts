// Per-user search latency against the stored volume: the service's retrieval statement (session +
// window + top-k search in one query) for random users' live sessions, one client, alone or interleaved with another database's.
import type pg from 'pg';
import { questionSearch } from '../../services/core/search-terms/lexical-terms.js';
import { retrieveMemory } from '../../services/db/repositories/memory-retrieval.js';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import { scopedDatabase } from '../../services/db/row-security.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { conversationStream, TENANT } from './data.js';
import { SETTINGS } from './floor.js';
import { type LoadResult, summarise } from './load.js';
import { DIMENSIONS, EMBEDDING_MODEL } from './seed.js';

export interface SearchScale {
  turns: number;
  users: number;
  turnsPerUser: number;
  /** The service's retrieval statement. */
  search: LoadResult;
  /** Mean hits per search (k = 3; a lexical match, or similarity >= 0.25). */
  hits: number;
}

/**
 * `owner`: the service's statement, prepared, as the pool's login. `scoped`: as the service runs it,
 * as memorychat_app in the caller's row-level-security scope (on Citus its own transaction,
 * db/citus-scope.ts). On a Citus coordinator the owner's statement fails ("a column definition list
 * is required for functions returning \"record\"", docs/scaling.md), so the Citus benches measure scoped.
 */
export async function measureSearch(pool: pg.Pool, queries: number, seed = 99, mode: 'owner' | 'scoped' = 'owner'): Promise<SearchScale> {
  const searcher = await searchesOf(pool, queries, seed, mode);
  const started = performance.now();
  for (let i = 0; i < queries; i++) await searcher.search(i);
  return searcher.result((performance.now() - started) / 1000);
}

/**
 * The same measurement on several databases at once, interleaved: case i runs on each in turn (the
 * order reversed every other case), so a change of the machine's load reaches every database alike.
 */
export async function measureSearchSideBySide(
  pools: Record<string, pg.Pool>,
  queries: number,
  seed = 99,
  mode: 'owner' | 'scoped' = 'owner',
): Promise<Record<string, SearchScale>> {
  const searchers = await Promise.all(
    Object.entries(pools).map(async ([name, pool]) => ({ name, ...(await searchesOf(pool, queries, seed, mode)) })),
  );
  const started = performance.now();
  for (let i = 0; i < queries; i++) {
    for (const s of i % 2 ? [...searchers].reverse() : searchers) await s.search(i);
  }
  const seconds = (performance.now() - started) / 1000;
  return Object.fromEntries(searchers.map((s) => [s.name, s.result(seconds)]));
}

/** The cases of a measurement on `pool` (random users' live sessions and questions), run one by one. */
async function searchesOf(pool: pg.Pool, queries: number, seed: number, mode: 'owner' | 'scoped') {
  const turns = Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM turns')).rows[0]!.n);
  const users = Number((await pool.query<{ n: string }>('SELECT count(DISTINCT user_id) AS n FROM sessions')).rows[0]!.n);
  const next = conversationStream(seed, users);
  const cases: { user: string; session: string; database: string; vector: number[]; search: ReturnType<typeof questionSearch> }[] = [];
  for (let i = 0; i < queries; i++) {
    const c = next();
    const user = `bench-user-${String(c.user).padStart(5, '0')}`;
    const s = await pool.query<{ session_id: string }>(
      'SELECT session_id FROM sessions WHERE tenant_id = $1 AND user_id = $2 ORDER BY updated_at DESC LIMIT 1 OFFSET $3',
      [TENANT, user, i % 5],
    );
    cases.push({
      user,
      session: s.rows[0]?.session_id ?? crypto.randomUUID(),
      database: c.database,
      vector: embedText(c.questions.at(-1)!, DIMENSIONS)!,
      search: questionSearch(c.questions.at(-1)!),
    });
  }
  const { asUser } = scopedDatabase(pool);
  const db = (user: string): Queryable => (mode === 'scoped' ? asUser({ tenantId: TENANT, userId: user }) : pool);
  const latencies: number[] = [];
  let hits = 0;
  return {
    async search(i: number) {
      const c = cases[i]!;
      const t0 = performance.now();
      const r = await retrieveMemory(db(c.user), {
        identity: { tenantId: TENANT, userId: c.user, roles: [] },
        sessionId: c.session,
        now: new Date(),
        windowSize: SETTINGS.windowSize,
        k: SETTINGS.k,
        minSimilarity: SETTINGS.minSimilarity,
        embedding: c.vector,
        embeddingModel: EMBEDDING_MODEL,
        search: c.search,
        scope: { requested: [c.database] },
      });
      if (i < 40) return; // the first 40 cases warm the cache
      latencies.push(performance.now() - t0);
      hits += r.similar.length;
    },
    result(seconds: number): SearchScale {
      const search = summarise(latencies, 1, seconds);
      return { turns, users, turnsPerUser: turns / Math.max(1, users), search, hits: hits / Math.max(1, latencies.length) };
    },
  };
}
