import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulkSeed, withoutAnnIndexes } from '../../scripts/bench/bulk-seed.js';
import { EMBEDDING_MODEL } from '../../scripts/bench/seed.js';
import { type Database, openDatabase } from '../../services/db/pool.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../support/databases/test-database.js';

// The bench's seeder for 1M turns (scripts/bench/bulk-seed.ts); the server project runs it (vitest.config.ts).
describe('the bulk seeder of the Citus bench and the migration measurement', () => {
  let testDatabase: TestDatabase;
  let database: Database;
  let admin: ReturnType<typeof adminPool>;

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
    admin = adminPool(testDatabase, database);
    await withoutAnnIndexes(admin.pool, () => bulkSeed(admin.pool, { fromUser: 0, toUser: 3, turnsPerUser: 40 }));
  }, 180_000);
  afterAll(async () => {
    await admin?.close();
    await database?.close();
    await testDatabase?.remove();
  });

  it('when turns are seeded, then each has a unit vector of its own near its text embedding, of the bench model', async () => {
    const { rows } = await admin.pool.query<{ n: number; distinct: number; norms: number; near: number; models: string[] }>(
      `SELECT count(*)::int AS n, count(DISTINCT t.embedding)::int AS distinct,
              max(abs(vector_norm(t.embedding) - 1)) AS norms,
              min(1 - (t.embedding <=> b.embedding)) AS near, array_agg(DISTINCT t.embedding_model) AS models
       FROM turns t
       JOIN LATERAL (SELECT l2_normalize(b.features) AS embedding FROM bench_templates b
                     WHERE (b.question, b.answer, b.sql_query) = (t.question, t.answer, t.sql_query) LIMIT 1) b ON true`,
    );
    expect(rows[0]).toMatchObject({ n: 120, distinct: 120, models: [EMBEDDING_MODEL] });
    expect(rows[0]!.norms).toBeLessThan(1e-5);
    // Two noise vectors of norm 0.25: cosine ~0.94 to the text's own embedding, never a copy of it.
    expect(rows[0]!.near).toBeGreaterThan(0.85);
    const { rows: copies } = await admin.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM turns t JOIN bench_templates b ON l2_normalize(b.features) = t.embedding',
    );
    expect(copies[0]!.n).toBe(0);
  });

  it("when turns are seeded, then every session counts its turns, numbered 1..n, and the user's own texts fill it", async () => {
    const { rows } = await admin.pool.query<{ wrong: number; users: number; sessions: number }>(
      `SELECT count(*) FILTER (WHERE s.turn_count <> x.n OR s.last_turn_number <> x.n OR x.top <> x.n)::int AS wrong,
              count(DISTINCT s.user_id)::int AS users, count(*)::int AS sessions
       FROM sessions s JOIN (SELECT tenant_id, user_id, session_id, count(*)::int AS n, max(turn_number) AS top
                             FROM turns GROUP BY 1, 2, 3) x USING (tenant_id, user_id, session_id)`,
    );
    expect(rows[0]!.wrong).toBe(0);
    expect(rows[0]!.users).toBe(3);
    expect(rows[0]!.sessions).toBeGreaterThanOrEqual(120 / 5);
    const { rows: terms } = await admin.pool.query<{ empty: number }>(
      "SELECT count(*) FILTER (WHERE search_terms IS NULL OR search_terms = ''::tsvector)::int AS empty FROM turns",
    );
    expect(terms[0]!.empty).toBe(0);
  });

  it('when the load is done, then the approximate indexes dropped for it are there again', async () => {
    const { rows } = await admin.pool.query<{ name: string }>(
      "SELECT indexname AS name FROM pg_indexes WHERE tablename = 'turns' AND indexdef ILIKE '%USING ivfflat%' ORDER BY 1",
    );
    expect(rows.map((r) => r.name)).toEqual(['turns_ann_local_hash_v2_384', 'turns_ann_text_embedding_3_small_1536']);
  });
});
