import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_MODEL } from '../../../../services/config/config.js';
import { type Database, openDatabase } from '../../../../services/db/pool.js';
import { retrieveMemory } from '../../../../services/db/repositories/memory-retrieval.js';
import { scopedDatabase } from '../../../../services/db/row-security.js';
import { embedText } from '../../../../services/providers/embeddings/local-embedder.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';
import { seedSession } from '../../../support/service/seed-memory.js';

/** /memoryChat renders 500 characters of an answer: the retrieval reads no more of the window's and similar turns' answers. */
describe('answers read by the retrieval statement', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;
  let sessionId: string;
  const user = { tenantId: 'default', userId: 'verbose', roles: [] as string[] };
  const long = `Result: ${'😀 x'.repeat(2000)}`;

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
    admin = adminPool(testDatabase, database);
    const expiresAt = new Date(Date.now() + 86_400_000);
    sessionId = await seedSession(admin.pool, { userId: user.userId, turns: 3, expiresAt });
    await seedSession(admin.pool, { userId: user.userId, turns: 3, expiresAt });
    await admin.pool.query('UPDATE turns SET answer = $1 WHERE user_id = $2', [long, user.userId]);
  });
  afterAll(async () => {
    await admin?.close();
    await database?.close();
    await testDatabase?.remove();
  });

  const retrieve = (answerChars?: number) =>
    retrieveMemory(scopedDatabase(database.pool).asUser(user), {
      identity: user,
      sessionId,
      now: new Date(),
      windowSize: 3,
      k: 3,
      minSimilarity: 0,
      embedding: embedText(`sales ${user.userId}`, 384),
      embeddingModel: `${LOCAL_MODEL}@384`,
      scope: {},
      ...(answerChars ? { answerChars } : {}),
    });

  it('when a caller asks for the first characters of answers, then the window and similar turns carry only those, counted in characters', async () => {
    const cut = await retrieve(501);
    expect(cut.window).toHaveLength(3);
    expect(cut.similar).toHaveLength(3);
    for (const turn of [...cut.window, ...cut.similar]) {
      expect(turn.answer).toBe([...long].slice(0, 501).join(''));
    }
  });

  it('when a caller asks for none, then the answers are whole', async () => {
    const whole = await retrieve();
    expect([...whole.window, ...whole.similar].map((t) => t.answer)).toEqual(Array(6).fill(long));
  });
});
