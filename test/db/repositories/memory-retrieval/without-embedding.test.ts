import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_MODEL } from '../../../../services/config/config.js';
import { questionSearch } from '../../../../services/core/search-terms/lexical-terms.js';
import { type Database, openDatabase } from '../../../../services/db/pool.js';
import { retrieveMemory } from '../../../../services/db/repositories/memory-retrieval.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';
import { seedSession } from '../../../support/service/seed-memory.js';

/**
 * A retrieval without the question's embedding (MEMORY_SEMANTIC_SEARCH_K=0, a request's
 * semantic_search_k of 0, or the embedder down) reads the session and its window only. Postgres's plan
 * for a NULL vector leaves the search out, so it always looked cheaper than the statement's generic
 * plan and was made anew on every call, planning the whole statement each time (docs/performance.md,
 * "Without an embedding"): such a retrieval runs the generic plan from its first call.
 */
describe('a retrieval without the question’s embedding', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;
  let sessionId: string;
  const user = { tenantId: 'default', userId: 'no-vector', roles: [] as string[] };

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    // One connection: the prepared statement's plan counts below are that connection's.
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
    admin = adminPool(testDatabase, database);
    const expiresAt = new Date(Date.now() + 86_400_000);
    sessionId = await seedSession(admin.pool, { userId: user.userId, turns: 4, expiresAt });
    await seedSession(admin.pool, { userId: user.userId, turns: 6, expiresAt });
  });
  afterAll(async () => {
    await admin?.close();
    await database?.close();
    await testDatabase?.remove();
  });

  const retrieve = () =>
    retrieveMemory(database.scoped.asUser(user), {
      identity: user,
      sessionId,
      now: new Date(),
      windowSize: 3,
      k: 0,
      minSimilarity: 0.25,
      embedding: null,
      embeddingModel: `${LOCAL_MODEL}@384`,
      search: questionSearch('How many orders were there?'),
      scope: {},
      recentQuestions: 5,
    });

  const plans = async () => {
    const { rows } = await database.pool.query<{ generic: number; custom: number }>(
      `SELECT coalesce(sum(generic_plans), 0)::int AS generic, coalesce(sum(custom_plans), 0)::int AS custom
       FROM pg_prepared_statements WHERE statement LIKE 'WITH sess AS%'`,
    );
    return rows[0]!;
  };

  it('when it is asked for ten times, then each call runs the generic plan and reads the window and no similar turn', async () => {
    const before = await plans();
    for (let call = 0; call < 10; call++) {
      const read = await retrieve();
      expect(read.session?.session_id).toBe(sessionId);
      expect(read.window.map((t) => t.turn_number)).toEqual([4, 3, 2]);
      expect(read.recent.map((t) => t.turn_number)).toEqual([4, 3, 2, 1]);
      expect(read.similar).toEqual([]);
    }
    const after = await plans();
    expect(after.custom - before.custom).toBe(0);
    expect(after.generic - before.generic).toBe(10);
  });
});
