import pgvector from 'pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_MODEL } from '../../../../services/config/config.js';
import { questionSearch, turnSearchTerms } from '../../../../services/core/search-terms/lexical-terms.js';
import { type Database, openDatabase } from '../../../../services/db/pool.js';
import { retrieveMemory } from '../../../../services/db/repositories/memory-retrieval.js';
import { embedText } from '../../../../services/providers/embeddings/local-embedder.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';
import { seedSession } from '../../../support/service/seed-memory.js';

/**
 * The lexical list ranks matches among the user's newest 1,000 turns (hybrid-rank.ts, LEXICAL_WINDOW):
 * a turn only a word of the question finds is found while it is among them, and left to the vector
 * list once older. 1,010 turns in one session, each a second newer than the one before: the oldest
 * and the newest name a zeppelin, and no vector brings either near the question. Without a window
 * both are found; a window taken in whatever order the plan reads the turns is not caught here, since
 * the plan reads them through the recency index, newest first.
 */
describe('the lexical window of a user with more turns than it holds', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;
  const user = { tenantId: 'default', userId: 'archivist', roles: [] as string[] };
  const question = 'Where is the zeppelin hangar?';
  const model = `${LOCAL_MODEL}@384`;
  const TURNS = 1010;
  let sessionId: string;

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
    admin = adminPool(testDatabase, database);
    const start = new Date(Date.now() - 86_400_000);
    sessionId = await seedSession(admin.pool, {
      userId: user.userId,
      turns: TURNS,
      expiresAt: new Date(Date.now() + 86_400_000),
      createdAt: start,
    });
    // The other turns lie nearest the question by vector and share none of its words.
    const filler = turnSearchTerms({ question: 'Total sales by region', sqlQuery: 'SELECT region FROM sales', tablesUsed: [] });
    await admin.pool.query(
      `UPDATE turns SET created_at = $3::timestamptz + turn_number * interval '1 second', search_terms = $4::tsvector, embedding = $5::vector
       WHERE user_id = $1 AND session_id = $2`,
      [user.userId, sessionId, start, filler, pgvector.toSql(embedText(question, 384)!)],
    );
    const zeppelin = turnSearchTerms({ question, sqlQuery: 'SELECT place FROM airships', tablesUsed: [] });
    await admin.pool.query(
      `UPDATE turns SET question = $3, search_terms = $4::tsvector, embedding = $5::vector
       WHERE user_id = $1 AND session_id = $2 AND turn_number IN (1, $6)`,
      [user.userId, sessionId, question, zeppelin, pgvector.toSql(embedText('quarterly ledger of accounts payable', 384)!), TURNS],
    );
  });
  afterAll(async () => {
    await admin?.close();
    await database?.close();
    await testDatabase?.remove();
  });

  it('when only a word links the question to the newest and the oldest of 1,010 turns, then the newest is found and the oldest is not', async () => {
    const { similar } = await retrieveMemory(database.scoped.asUser(user), {
      identity: user,
      now: new Date(),
      windowSize: 0,
      k: 20,
      minSimilarity: 0.25,
      embedding: embedText(question, 384),
      embeddingModel: model,
      search: questionSearch(question),
      scope: {},
    });
    // The vector list holds only the other turns: the lexical list alone can find either.
    expect(similar.filter((t) => t.question !== question).every((t) => t.similarity > 0.99)).toBe(true);
    expect(similar.filter((t) => t.question === question).map((t) => t.turn_number)).toEqual([TURNS]);
  });
});
