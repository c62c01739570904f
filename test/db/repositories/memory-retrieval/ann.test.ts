import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainScoped, type PlanNode, ranAnnFunction } from '../../../../scripts/bench/retrieval-plan.js';
import { LOCAL_MODEL } from '../../../../services/config/config.js';
import { type Database, openDatabase } from '../../../../services/db/pool.js';
import { retrieveMemory } from '../../../../services/db/repositories/memory-retrieval.js';
import { pathHint } from '../../../../services/db/repositories/path-memory.js';
import { type SearchRequest, searchTurns } from '../../../../services/db/repositories/turns.js';
import { embedText } from '../../../../services/providers/embeddings/local-embedder.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';

const MODEL = `${LOCAL_MODEL}@384`;
const TOPICS = ['singers', 'concerts', 'stadiums', 'pets', 'students', 'countries', 'languages', 'cities', 'orders', 'invoices'];

/** Whether the statement holds the nearest-turns function at all, run or not. */
function plansAnnFunction(node: PlanNode): boolean {
  return node['Function Name'] === 'nearest_turns_local_hash_v2_384' || (node.Plans ?? []).some(plansAnnFunction);
}

/**
 * Users past MEMORY_EXACT_SEARCH_MAX_TURNS with enough of the index's rows (hybrid-rank.ts,
 * ANN_ROW_COST) are searched through the model's approximate index; others exactly. The threshold is
 * lowered here so that a few dozen turns make a heavy user, and the row cost set to 0 where the
 * approximate path is compared with exact search: the index has one list here (migration 020 built
 * it over no rows), which the scan reads whole, so its answer must equal exact search's.
 */
describe('approximate search for users with a long history', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;
  const heavy = { tenantId: 'default', userId: 'heavy-user', roles: [] as string[] };
  const light = { tenantId: 'default', userId: 'light-user', roles: [] as string[] };

  /** Turns already in the model's approximate index (migration 017), as a user's turns are once they are marked. */
  async function seed(userId: string, turns: number) {
    const sessionId = randomUUID();
    await admin.pool.query(
      `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
       VALUES ('default', $1, $2, 'history', now(), now(), now() + interval '1 day', $3, $3)`,
      [userId, sessionId, turns],
    );
    for (let n = 1; n <= turns; n++) {
      const question = `How many ${TOPICS[n % TOPICS.length]} were there in region ${n}?`;
      await admin.pool.query(
        `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, embedding, embedding_model, ann_indexed)
         VALUES ('default', $1, $2, $3, now(), 'ok', $4, 'Some', $5::vector, $6, true)`,
        [userId, sessionId, n, question, pgvector.toSql(embedText(question, 384)), MODEL],
      );
    }
  }

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
    admin = adminPool(testDatabase, database);
    await seed(heavy.userId, 60);
    await seed(light.userId, 5);
  });
  afterAll(async () => {
    await admin?.close();
    await database?.close();
    await testDatabase?.remove();
  });

  const search = (identity: typeof heavy, exactSearchMaxTurns: number, annRowCost: number | undefined): SearchRequest => ({
    identity,
    now: new Date(),
    embedding: embedText('How many concerts were there in region 7?', 384)!,
    embeddingModel: MODEL,
    k: 10,
    minSimilarity: -1,
    search: null,
    scope: {},
    exactSearchMaxTurns,
    annRowCost,
  });

  /** /memoryChat's retrieval for `identity`, the approximate path chosen by turn count alone. */
  const retrieval = (identity: typeof heavy, exactSearchMaxTurns: number) => ({
    identity,
    now: new Date(),
    windowSize: 5,
    k: 3,
    minSimilarity: 0,
    embedding: embedText('How many pets were there in region 12?', 384),
    embeddingModel: MODEL,
    scope: {},
    exactSearchMaxTurns,
    annRowCost: 0,
  });

  it('when a user past the threshold searches, then the approximate index is read and the same top turns come back as from exact search', async () => {
    const approximate = await explainScoped(database.pool, heavy, (db) => searchTurns(db, search(heavy, 20, 0)));
    const exact = await explainScoped(database.pool, heavy, (db) => searchTurns(db, search(heavy, 1000, 0)));
    expect(ranAnnFunction(approximate.plan)).toBe(true);
    expect(ranAnnFunction(exact.plan)).toBe(false);
    // Turns as near as each other come in either order (their fused ranks tie), so both lists are compared sorted.
    const turns = (rows: Record<string, unknown>[]) =>
      rows.map((r) => `${Number(r.similarity).toFixed(6)} ${String(r.turn_number).padStart(3)}`).sort();
    expect(turns(approximate.rows)).toHaveLength(10);
    expect(turns(approximate.rows)).toEqual(turns(exact.rows));
  });

  it("when a user past the threshold asks /memoryChat's retrieval, then its similar turns are exact search's", async () => {
    const approximate = await explainScoped(database.pool, heavy, (db) => retrieveMemory(db, retrieval(heavy, 20)));
    const exact = await retrieveMemory(database.scoped.asUser(heavy), retrieval(heavy, 1000));
    expect(ranAnnFunction(approximate.plan)).toBe(true);
    const similar = approximate.rows.filter((r) => r.source === 'similar').map((r) => (r.row as { turn_number: number }).turn_number);
    expect(similar).toHaveLength(3);
    expect(similar.sort()).toEqual(exact.similar.map((t) => t.turn_number).sort());
  });

  it('when a user below the threshold searches, then exact search is used', async () => {
    const { plan, rows } = await explainScoped(database.pool, light, (db) => searchTurns(db, search(light, 20, 0)));
    expect(ranAnnFunction(plan)).toBe(false);
    expect(rows).toHaveLength(5);
  });

  it('when a user counted past the threshold asks again, then the count stands until they are erased, and the statement runs its generic plan', async () => {
    const counted = { tenantId: 'default', userId: 'counted-user', roles: [] as string[] };
    await seed(counted.userId, 30);
    const retrieve = () => retrieveMemory(database.scoped.asUser(counted), retrieval(counted, 20));
    const genericPlans = async () =>
      (
        await database.pool.query(
          `SELECT sum(generic_plans)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%nearest_turns_local_hash_v2_384%'`,
        )
      ).rows[0].n as number;
    expect((await retrieve()).annIndexed).toBe(true);
    const before = await genericPlans();
    // Counted again, the user would now be below the threshold: the process's count of a moment ago stands.
    await admin.pool.query(`UPDATE sessions SET turn_count = 1 WHERE user_id = $1`, [counted.userId]);
    expect((await retrieve()).annIndexed).toBe(true);
    // An erasure moves the user's epoch: the next retrieval counts.
    await admin.pool.query(`INSERT INTO erasures (tenant_id, user_digest, epoch) VALUES ('default', memorychat_user_digest($1), 1)`, [
      counted.userId,
    ]);
    const afterErasure = await retrieve();
    expect(afterErasure.eraseEpoch).toBe(1);
    expect(afterErasure.annIndexed).toBe(false);
    // Both retrievals that took the user as known ran the statement's generic plan from their first call.
    expect((await genericPlans()) - before).toBe(2);
  });

  it("when a user's search found them below the threshold, then their next search is sent without the approximate path and finds the same turns", async () => {
    const first = await searchTurns(database.scoped.asUser(light), search(light, 20, 0));
    const next = await explainScoped(database.pool, light, (db) => searchTurns(db, search(light, 20, 0)));
    expect(plansAnnFunction(next.plan)).toBe(false);
    expect(first).toHaveLength(5);
    expect(next.rows.map((r) => r.turn_number)).toEqual(first.map((t) => t.turn_number));
  });

  it("when a user's search counted them past the threshold, then their next search takes the approximate path without counting, until they are erased", async () => {
    const counted = { tenantId: 'default', userId: 'searching-user', roles: [] as string[] };
    await seed(counted.userId, 30);
    await searchTurns(database.scoped.asUser(counted), search(counted, 20, 0));
    // Counted again, the user would now be below the threshold: the process's count of a moment ago stands.
    await admin.pool.query(`UPDATE sessions SET turn_count = 1 WHERE user_id = $1`, [counted.userId]);
    const next = await explainScoped(database.pool, counted, (db) => searchTurns(db, search(counted, 20, 0)));
    expect(ranAnnFunction(next.plan)).toBe(true);
    expect(next.rows).toHaveLength(10);
    await admin.pool.query(`INSERT INTO erasures (tenant_id, user_digest, epoch) VALUES ('default', memorychat_user_digest($1), 1)`, [
      counted.userId,
    ]);
    const afterErasure = await explainScoped(database.pool, counted, (db) => searchTurns(db, search(counted, 20, 0)));
    expect(ranAnnFunction(afterErasure.plan)).toBe(false);
  });

  it("when the approximate path is taken whatever the row cost, then the user's turns in all of their sessions are counted, as the probes for their share need", async () => {
    const spread = { tenantId: 'default', userId: 'spread-user', roles: [] as string[] };
    for (let session = 0; session < 4; session++) await seed(spread.userId, 8);
    await searchTurns(database.scoped.asUser(spread), search(spread, 1, 0));
    expect(pathHint(spread, MODEL, { exactSearchMaxTurns: 1, annRowCost: 0 }, false).known?.turns).toBe(32);
  });
});
