import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainRetrieval, explainScoped } from '../../../../scripts/bench/retrieval-plan.js';
import { LOCAL_MODEL } from '../../../../services/config/config.js';
import { questionSearch } from '../../../../services/core/search-terms/lexical-terms.js';
import { type Database, openDatabase } from '../../../../services/db/pool.js';
import { searchTurns } from '../../../../services/db/repositories/turns.js';
import { embedText } from '../../../../services/providers/embeddings/local-embedder.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';
import { seedSession } from '../../../support/service/seed-memory.js';

/**
 * The retrieval statement's (and /memory/search's) work for a user with a long history must grow with the user's turns, not
 * with turns x sessions (a join to `sessions` once examined 399,000 rows for 2,000 turns in 400
 * sessions). The embedded database has no statistics (PGlite runs no autovacuum), the worst case for
 * the planner; on the server the tables are new, before autovacuum has analyzed them. The statement
 * is planned as the generic plan a prepared statement ends up with.
 */
describe('memory retrieval for a user with a long history', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;
  const user = { tenantId: 'default', userId: 'analyst', roles: [] as string[] };

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
    admin = adminPool(testDatabase, database);
    const expiresAt = new Date(Date.now() + 86_400_000);
    // In the approximate index, as the user's appends leave their turns once past the threshold (migration 017).
    const annIndexed = true;
    for (let s = 0; s < 400; s++) await seedSession(admin.pool, { userId: user.userId, turns: 5, expiresAt, annIndexed });
    // Expired sessions are skipped by memory but still stored until cleanup.
    for (let s = 0; s < 20; s++) {
      await seedSession(admin.pool, { userId: user.userId, turns: 5, expiresAt: new Date(Date.now() - 1000), annIndexed });
    }
  });
  afterAll(async () => {
    await admin?.close();
    await database?.close();
    await testDatabase?.remove();
  });

  it('when a user with 2,100 turns in 420 sessions asks, then the statement examines rows in proportion to the turns', async () => {
    const { examined, similar } = await explainRetrieval(database.pool, {
      identity: user,
      now: new Date(),
      windowSize: 10,
      k: 3,
      minSimilarity: 0,
      embedding: embedText('sales analyst', 384),
      embeddingModel: `${LOCAL_MODEL}@384`,
      scope: {},
    });
    expect(similar).toBe(3);
    // Each live turn is read and ranked once, each session checked once: a few rows per turn at most.
    expect(examined).toBeLessThan(5 * 2100);
  });

  it('when the same user searches their memory, then /memory/search examines rows in proportion to the turns too', async () => {
    const { examined, rows } = await explainScoped(database.pool, user, (db) =>
      searchTurns(db, {
        identity: user,
        now: new Date(),
        embedding: embedText('sales analyst', 384)!,
        embeddingModel: `${LOCAL_MODEL}@384`,
        k: 5,
        minSimilarity: -1,
        search: questionSearch('sales analyst'),
        scope: {},
      }),
    );
    expect(rows).toHaveLength(5);
    expect(rows.every((r) => typeof r.session_name === 'string')).toBe(true);
    // Each turn is read once and its scored row once by each of the two ranked lists: a few rows per
    // turn (10,840 when written). The join to sessions this replaced examined 812,840 rows here, on
    // both databases: it grew with turns x sessions.
    expect(examined).toBeLessThan(6 * 2100);
  });
});
