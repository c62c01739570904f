import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainScoped, ranAnnFunction } from '../../../scripts/bench/retrieval-plan.js';
import { LOCAL_MODEL, loadConfig } from '../../../services/config/config.js';
import { createProcessors } from '../../../services/core/jobs/processors.js';
import { type Database, openDatabase } from '../../../services/db/pool.js';
import { type SearchRequest, searchTurns } from '../../../services/db/repositories/turns.js';
import { createEmbedder } from '../../../services/providers/embeddings/index.js';
import { embedText } from '../../../services/providers/embeddings/local-embedder.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../../support/databases/test-database.js';
import { silentLog } from '../../support/service/test-worker.js';

const MODEL = `${LOCAL_MODEL}@384`;
const INDEX = 'turns_ann_local_hash_v2_384';
const TOPICS = ['singers', 'concerts', 'stadiums', 'pets', 'students', 'countries', 'languages', 'cities', 'orders', 'invoices'];
const REGIONS = ['north', 'south', 'east', 'west', 'centre', 'coast', 'hills'];
const TURNS = 1200;

/**
 * Migration 020's IVFFlat index is built over the rows present; the retention cleanup job builds it
 * again with √rows lists (per shard on Citus) once its rows have outgrown its lists
 * (db/ann-index-upkeep.ts), and the search reads the new index.
 */
describe('the approximate index kept in step with its rows', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;
  const heavy = { tenantId: 'default', userId: 'upkeep-heavy', roles: [] as string[] };

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 2 });
    admin = adminPool(testDatabase, database);
    // Less maintenance_work_mem than the builds below need (1 MB, the least Postgres takes): the
    // upkeep raises it for its own build (buildMemoryKb). The service's sessions start with it.
    if (testDatabase.server) {
      await admin.pool.query(`ALTER DATABASE "${testDatabase.server.database}" SET maintenance_work_mem = '1MB'`);
      await database.close();
      database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 2 });
    } else {
      await admin.pool.query(`SET maintenance_work_mem = '1MB'`);
    }
    const sessionId = randomUUID();
    await admin.pool.query(
      `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
       VALUES ('default', $1, $2, 'history', now(), now(), now() + interval '1 day', $3, $3)`,
      [heavy.userId, sessionId, TURNS],
    );
    // Distinct questions, so that the lists k-means draws are real clusters.
    const questions = Array.from(
      { length: TURNS },
      (_, n) => `How many ${TOPICS[n % TOPICS.length]} were in the ${REGIONS[n % REGIONS.length]} in ${1900 + (n % 97)}?`,
    );
    await admin.pool.query(
      `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, embedding, embedding_model, ann_indexed)
       SELECT 'default', $1, $2, n, now(), 'ok', q, 'Some', v::vector, $5, true
       FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS x (q, v, n)`,
      [heavy.userId, sessionId, questions, questions.map((q) => pgvector.toSql(embedText(q, 384))), MODEL],
    );
  });
  afterAll(async () => {
    await admin?.close();
    await database?.close();
    await testDatabase?.remove();
  });

  async function lists(): Promise<number> {
    const { rows } = await admin.pool.query(
      `SELECT o.option_value::int AS lists FROM pg_class c, pg_options_to_table(c.reloptions) o WHERE c.oid = $1::regclass AND o.option_name = 'lists'`,
      [INDEX],
    );
    return rows[0].lists;
  }

  const search = (question: string, exactSearchMaxTurns: number): SearchRequest => ({
    identity: heavy,
    now: new Date(),
    embedding: embedText(question, 384)!,
    embeddingModel: MODEL,
    k: 10,
    minSimilarity: -1,
    search: null,
    scope: {},
    exactSearchMaxTurns,
    annRowCost: 0,
  });

  it('when the cleanup job runs over an index whose rows outgrew its lists, then it builds it again with √rows lists, in the memory the build needs, and not again on the next run', async () => {
    const config = loadConfig({ ...testDatabase.env });
    const processors = createProcessors({
      config,
      db: database.scoped,
      embedder: createEmbedder(config),
      clock: () => new Date(),
      queue: { enqueue: async () => {}, removeUserJobs: async () => 0 },
    });
    const ctx = { jobId: 'x', attempt: 1, finalAttempt: true, log: silentLog };
    const workMem = async () => (await database.pool.query('SHOW maintenance_work_mem')).rows[0].maintenance_work_mem;
    expect(await workMem()).toBe('1MB');
    expect(await lists()).toBe(1);
    const first = (await processors.cleanup({}, ctx)) as {
      annIndexes: { index: string; rows: number; lists: number; rebuiltWith?: number }[];
    };
    const state = first.annIndexes.find((s) => s.index === INDEX)!;
    // On Citus each shard's index holds its own rows: counted per shard of \`turns\`.
    const { rows: distributed } = await admin.pool.query(`SELECT to_regclass('pg_dist_shard') IS NOT NULL AS citus`);
    const shards = distributed[0].citus
      ? Number((await admin.pool.query(`SELECT count(*) AS n FROM pg_dist_shard WHERE logicalrelid = 'turns'::regclass`)).rows[0].n)
      : 1;
    expect(state).toEqual({ index: INDEX, rows: Math.ceil(TURNS / shards), lists: 1, rebuiltWith: Math.round(Math.sqrt(TURNS / shards)) });
    expect(await lists()).toBe(state.rebuiltWith);
    // Raised for the build only.
    expect(await workMem()).toBe('1MB');
    // The other model's index holds no row: one list, in step.
    expect(first.annIndexes.find((s) => s.index !== INDEX)).toMatchObject({ rows: 0, lists: 1 });
    expect(first.annIndexes.find((s) => s.index !== INDEX)?.rebuiltWith).toBeUndefined();

    const second = (await processors.cleanup({}, ctx)) as typeof first;
    expect(second.annIndexes.find((s) => s.index === INDEX)).toEqual({ index: INDEX, rows: state.rows, lists: state.rebuiltWith });
    const { rows } = await admin.pool.query(`SELECT relname FROM pg_class WHERE relname LIKE $1 ORDER BY relname`, [`${INDEX}%`]);
    expect(rows.map((r) => r.relname)).toEqual([INDEX]);
  });

  it("when a heavy user searches the rebuilt index, then its lists are read and its nearest turns are exact search's", async () => {
    expect(await lists()).toBeGreaterThan(1);
    // On Citus every user is searched exactly (hybrid-rank.ts, \`distributed\`; docs/scaling.md): there a
    // user past the threshold gets exact search's turns, where the nearest-turns function would be refused.
    const citus = await database.scoped.asMaintenance().isDistributed?.();
    let found = 0;
    const questions = [
      'How many pets were in the hills in 1950?',
      'How many invoices were in the coast in 1920?',
      'Which singers were in the north?',
    ];
    for (const question of questions) {
      const approximate = citus
        ? await searchTurns(database.scoped.asUser(heavy), search(question, 20))
        : await explainScoped(database.pool, heavy, (db) => searchTurns(db, search(question, 20))).then(({ plan, rows }) => {
            expect(ranAnnFunction(plan)).toBe(true);
            return rows.map((r) => ({ similarity: Number(r.similarity) }));
          });
      const exact = await searchTurns(database.scoped.asUser(heavy), search(question, 100_000));
      expect(approximate).toHaveLength(10);
      // Turns as near as the tenth may tie with it: recall counts by similarity, not by turn.
      const tenth = exact[9]!.similarity;
      found += approximate.filter((r) => r.similarity >= tenth - 1e-9).length;
    }
    // IVF_PROBES (40) probes of 35 lists for a user who holds all of the index's rows: every list.
    if (citus) expect(found).toBe(questions.length * 10);
    else expect(found / (questions.length * 10)).toBeGreaterThanOrEqual(0.9);
  });

  it('when the index knows its rows and lists, then a user past the threshold takes the approximate path only if it reads fewer rows than exact search', async () => {
    // 1,200 rows in 35 lists, all the user's: IVF_PROBES (40) reaches every list, 1,200 rows read at
    // the row cost, against 1,200 turns scored exactly (both paths match the same newest turns
    // lexically): taken at a row cost of 0.95 (1,140), not at 1.05 (1,260) nor at the default.
    const citus = await database.scoped.asMaintenance().isDistributed?.();
    const taken = async (annRowCost: number | undefined) => {
      const request = { ...search('Which pets were in the west?', 20), annRowCost };
      const { plan, rows } = await explainScoped(database.pool, heavy, (db) => searchTurns(db, request));
      expect(rows).toHaveLength(10);
      return ranAnnFunction(plan);
    };
    if (citus) return; // searched exactly there (the test above), and the plan is not read on a coordinator.
    expect(await lists()).toBe(35);
    expect(await taken(0.95)).toBe(true);
    expect(await taken(1.05)).toBe(false);
    expect(await taken(undefined)).toBe(false);
  });
});
