// Per-user search latency against the stored volume: the service's retrieval statement (session +
// window + top-k search in one query) for random users' live sessions, one client, measured alone.
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
  const started = performance.now();
  for (const [i, c] of cases.entries()) {
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
    if (i < 40) continue; // the first 40 cases warm the cache
    latencies.push(performance.now() - t0);
    hits += r.similar.length;
  }
  const search = summarise(latencies, 1, (performance.now() - started) / 1000);
  return { turns, users, turnsPerUser: turns / Math.max(1, users), search, hits: hits / Math.max(1, latencies.length) };
}
