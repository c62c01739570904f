import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainScoped, ranAnnFunction } from '../../../scripts/bench/retrieval-plan.js';
import { LOCAL_MODEL } from '../../../services/config/config.js';
import { type Database, openDatabase } from '../../../services/db/pool.js';
import { type RetrievalRequest, retrieveMemory } from '../../../services/db/repositories/memory-retrieval.js';
import { appendTurn } from '../../../services/db/repositories/turn-append.js';
import { embedText } from '../../../services/providers/embeddings/local-embedder.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../../support/databases/test-database.js';
import { seedSession } from '../../support/service/seed-memory.js';

const MODEL = `${LOCAL_MODEL}@384`;
/** A few dozen turns make a user heavy here (MEMORY_EXACT_SEARCH_MAX_TURNS). */
const THRESHOLD = 20;

/**
 * Migration 017: the approximate index holds only the turns of users past the threshold, marked by their
 * appends; a light user's turn costs no index insert, and a heavy user's turns not yet marked are
 * still found.
 */
describe('which turns the approximate index holds', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;
  const heavy = { tenantId: 'default', userId: 'marked-heavy', roles: [] as string[] };
  const light = { tenantId: 'default', userId: 'marked-light', roles: [] as string[] };
  const expiresAt = new Date(Date.now() + 86_400_000);

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
    admin = adminPool(testDatabase, database);
    await seedSession(admin.pool, { userId: light.userId, turns: 3, expiresAt });
    // Past the threshold, none of it marked yet: 250 turns, more than the approximate path scores exactly (200).
    await seedSession(admin.pool, { userId: heavy.userId, turns: 250, expiresAt });
  });
  afterAll(async () => {
    await admin?.close();
    await database?.close();
    await testDatabase?.remove();
  });

  const retrieval = (identity: typeof heavy, question: string): RetrievalRequest => ({
    identity,
    now: new Date(),
    windowSize: 5,
    k: 3,
    minSimilarity: -1,
    embedding: embedText(question, 384),
    embeddingModel: MODEL,
    scope: {},
    exactSearchMaxTurns: THRESHOLD,
    annRowCost: 0,
  });

  async function store(identity: typeof heavy, question: string, annIndexed: boolean) {
    const stored = await appendTurn(database.scoped.asUser(identity), {
      identity,
      sessionId: randomUUID(),
      createWithName: question,
      now: new Date(),
      ttlMs: 86_400_000,
      ttlMode: 'sliding',
      eraseEpoch: 0,
      annIndexed,
      turn: {
        status: 'ok',
        question,
        augmentedQuestion: null,
        answer: 'An answer',
        sqlQuery: 'SELECT 1',
        queryExplanation: null,
        tablesUsed: [],
        vdpDatabaseNames: [],
        executionResult: null,
        metadata: {},
        embedding: embedText(question, 384),
        embeddingModel: MODEL,
        searchTerms: '',
      },
    });
    return stored!;
  }

  const marked = async (userId: string) =>
    (
      await admin.pool.query<{ ann_indexed: boolean; n: number }>(
        'SELECT ann_indexed, count(*)::int AS n FROM turns WHERE user_id = $1 GROUP BY ann_indexed ORDER BY ann_indexed',
        [userId],
      )
    ).rows.map((r) => `${r.ann_indexed}: ${r.n}`);

  it("when a light user's turn is stored after their retrieval, then it stays out of the approximate index", async () => {
    const retrieved = await retrieveMemory(database.scoped.asUser(light), retrieval(light, 'How many orders?'));
    expect(retrieved.annIndexed).toBe(false);
    await store(light, 'How many orders?', retrieved.annIndexed);
    expect(await marked(light.userId)).toEqual(['false: 4']);
  });

  it('when a heavy user has more unmarked turns than the approximate path scores exactly, then they are searched exactly, and their appends mark them', async () => {
    const question = 'Question 17 from marked-heavy about sales in region 3';
    const before = await explainScoped(database.pool, heavy, (db) => retrieveMemory(db, retrieval(heavy, question)));
    expect(ranAnnFunction(before.plan)).toBe(false);
    const retrieved = await retrieveMemory(database.scoped.asUser(heavy), retrieval(heavy, question));
    expect(retrieved.annIndexed).toBe(true);
    // The stored turn and a batch of 200 older ones enter the index; 50 are left.
    await store(heavy, 'How many invoices were paid?', retrieved.annIndexed);
    expect(await marked(heavy.userId)).toEqual(['false: 50', 'true: 201']);

    // Now the approximate path is taken, and a turn still unmarked is found by it as by exact search.
    const unmarked = await admin.pool.query<{ turn_number: number; session_id: string }>(
      'SELECT session_id, turn_number FROM turns WHERE user_id = $1 AND NOT ann_indexed ORDER BY turn_number LIMIT 1',
      [heavy.userId],
    );
    await admin.pool.query(
      `UPDATE turns SET embedding = $1::vector, question = 'the one unmarked' WHERE session_id = $2 AND turn_number = $3`,
      [`[${embedText('the one unmarked turn', 384)!.join(',')}]`, unmarked.rows[0]!.session_id, unmarked.rows[0]!.turn_number],
    );
    const after = await explainScoped(database.pool, heavy, (db) => retrieveMemory(db, retrieval(heavy, 'the one unmarked turn')));
    expect(ranAnnFunction(after.plan)).toBe(true);
    const similar = after.rows.filter((r) => r.source === 'similar').map((r) => (r.row as { question: string }).question);
    expect(similar[0]).toBe('the one unmarked');
  });
});
