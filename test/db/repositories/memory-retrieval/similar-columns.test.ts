import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_MODEL } from '../../../../services/config/config.js';
import { tablesOf } from '../../../../services/core/context/table-links.js';
import { tablesOfTerms, turnSearchTerms } from '../../../../services/core/search-terms/lexical-terms.js';
import { type Database, openDatabase } from '../../../../services/db/pool.js';
import { retrieveMemory } from '../../../../services/db/repositories/memory-retrieval.js';
import { scopedDatabase } from '../../../../services/db/row-security.js';
import { embedText } from '../../../../services/providers/embeddings/local-embedder.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';
import { seedSession } from '../../../support/service/seed-memory.js';

/**
 * What the retrieval statement reads of the window's and the similar turns: /memoryChat renders 500
 * characters of an answer and reads no more of it; the rerank reads a similar turn's tables from the
 * whole-name terms the statement sends instead of parsing its SQL, and both must give the same set.
 */
describe('the columns the retrieval statement reads of remembered turns', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;
  let sessionId: string;
  const user = { tenantId: 'default', userId: 'verbose', roles: [] as string[] };
  // Characters beyond the BMP: JavaScript counts two units for each, Postgres's left() one character.
  const long = `Result: ${'😀 x'.repeat(2000)}`;
  const statements = [
    ['SELECT T1.Name FROM people AS T1 JOIN poker_player AS T2 ON T1.People_ID = T2.People_ID', []],
    ['SELECT x FROM "sales_db"."orders" o, public.customers WHERE o.id = 1', ['Orders', 'returns']],
    [null, ['Country']],
    ["SELECT count(*) FROM airports WHERE city = 'Aberdeen'", []],
  ] as const;

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
    admin = adminPool(testDatabase, database);
    const expiresAt = new Date(Date.now() + 86_400_000);
    sessionId = await seedSession(admin.pool, { userId: user.userId, turns: 3, expiresAt });
    const other = await seedSession(admin.pool, { userId: user.userId, turns: statements.length, expiresAt });
    await admin.pool.query('UPDATE turns SET answer = $1 WHERE user_id = $2', [long, user.userId]);
    for (const [i, [sql, tables]] of statements.entries()) {
      await admin.pool.query(
        'UPDATE turns SET sql_query = $1, tables_used = $2, search_terms = $3::tsvector WHERE session_id = $4 AND turn_number = $5',
        [sql, tables, turnSearchTerms({ question: 'Which ones?', sqlQuery: sql, tablesUsed: [...tables] }), other, i + 1],
      );
    }
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
      k: statements.length,
      minSimilarity: 0,
      embedding: embedText(`sales ${user.userId}`, 384),
      embeddingModel: `${LOCAL_MODEL}@384`,
      scope: {},
      ...(answerChars ? { answerChars } : {}),
    });

  it('when a caller asks for the first characters of answers, then the window and similar turns carry only those, counted in characters', async () => {
    const cut = await retrieve(501);
    expect(cut.window).toHaveLength(3);
    expect(cut.similar).toHaveLength(statements.length);
    for (const turn of [...cut.window, ...cut.similar]) expect(turn.answer).toBe([...long].slice(0, 501).join(''));
  });

  it('when an answer holds as many characters as asked, or as many bytes, then it is whole; one character fewer cuts it by one', async () => {
    const characters = [...long].length;
    const bytes = Buffer.byteLength(long);
    expect(bytes).toBeGreaterThan(characters);
    for (const asked of [characters, bytes]) {
      const { window, similar } = await retrieve(asked);
      expect([...window, ...similar].map((t) => t.answer)).toEqual(Array(3 + statements.length).fill(long));
    }
    const { window } = await retrieve(characters - 1);
    expect(window[0]!.answer).toBe([...long].slice(0, -1).join(''));
  });

  it('when a caller asks for none, then the answers are whole', async () => {
    const whole = await retrieve();
    expect([...whole.window, ...whole.similar].map((t) => t.answer)).toEqual(Array(3 + statements.length).fill(long));
  });

  it('when the statement sends a similar turn’s stored terms, then they name the tables its SQL reads and those of its tables_used it read', async () => {
    const { similar } = await retrieve(501);
    for (const turn of similar) {
      expect(turn.table_terms).not.toBeNull();
      expect(tablesOfTerms(turn.table_terms!)).toEqual(tablesOf({ ...turn, table_terms: null }));
    }
    expect(new Set(similar.map((t) => tablesOf(t).join(',')))).toEqual(
      // `returns` is in the second turn's tables_used but not in its SQL: a view its search only considered.
      new Set(['people,poker_player', 'customers,orders', 'country', 'airports']),
    );
  });

  it('when the terms were written by another terms version, then the tables come from the SQL', () => {
    expect(tablesOfTerms(['table:flights', 'terms:1'])).toBeUndefined();
    const turn = { sql_query: 'SELECT * FROM airports', tables_used: [], table_terms: ['table:flights', 'terms:1'] };
    expect(tablesOf(turn)).toEqual(['airports']);
  });
});
