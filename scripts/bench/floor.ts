// The floor: the service's own SQL statements (services/db/repositories/memory-retrieval.ts and turn-append.ts: load session +
// window + search in one statement, then the insert in one), issued directly with `pg` over the
// same connection setup as the service (db/pool.ts: one connection to the embedded database), with
// the same embeddings computed for their parameters. No HTTP, no auth, no context building.
import { questionSearch, turnSearchTerms } from '../../services/core/search-terms/lexical-terms.js';
import { retrieveMemory } from '../../services/db/repositories/memory-retrieval.js';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import { appendTurn } from '../../services/db/repositories/turn-append.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { answerFor, TENANT, turnEmbeddingText, userId } from './data.js';
import { DIMENSIONS, EMBEDDING_MODEL } from './seed.js';
import type { TurnFn } from './workload.js';

/** The service's defaults (services/config/config.ts). */
export const SETTINGS = { windowSize: 10, k: 3, minSimilarity: 0.25, ttlMs: 7 * 86_400_000 };

/** `dbFor` gives the statements' connection for the turn's user: a plain pool, or a row-security scope. */
export function floorTurns(dbFor: (owner: { tenantId: string; userId: string }) => Queryable): TurnFn {
  return async (t) => {
    const identity = { tenantId: TENANT, userId: userId(t.user), roles: [] };
    const db = dbFor(identity);
    const now = new Date();
    const embedding = embedText(t.question, DIMENSIONS);
    const retrieved = await retrieveMemory(db, {
      identity,
      sessionId: t.sessionId,
      now,
      windowSize: SETTINGS.windowSize,
      k: SETTINGS.k,
      minSimilarity: SETTINGS.minSimilarity,
      embedding,
      embeddingModel: EMBEDDING_MODEL,
      search: questionSearch(t.question),
      scope: { requested: [t.database] },
    });
    if (t.sessionId && !retrieved.session) throw new Error('session not found');
    const a = answerFor(t.question, t.sql);
    const sessionId = t.sessionId ?? crypto.randomUUID();
    const stored = await appendTurn(db, {
      identity,
      sessionId,
      createWithName: t.sessionId ? undefined : t.question.slice(0, 100),
      now,
      // The seeded users were never erased.
      eraseEpoch: 0,
      ttlMs: SETTINGS.ttlMs,
      ttlMode: 'sliding',
      turn: {
        status: 'ok',
        question: t.question,
        augmentedQuestion: null,
        answer: a.answer,
        sqlQuery: a.sql_query,
        queryExplanation: a.query_explanation,
        tablesUsed: a.tables_used,
        vdpDatabaseNames: [t.database],
        executionResult: a.execution_result,
        metadata: {},
        embedding: embedText(turnEmbeddingText(t.question, a), DIMENSIONS),
        embeddingModel: EMBEDDING_MODEL,
        searchTerms: turnSearchTerms({ question: t.question, sqlQuery: a.sql_query, tablesUsed: a.tables_used }),
      },
    });
    if (!stored) throw new Error('turn not stored');
    return sessionId;
  };
}
