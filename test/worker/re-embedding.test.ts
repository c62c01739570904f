import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProcessors } from '../../services/core/jobs/processors.js';
import { enqueueReEmbeddingIfNeeded, runReEmbedding } from '../../services/core/jobs/re-embedding.js';
import { retrieveMemory } from '../../services/db/repositories/memory-retrieval.js';
import { InProcessQueue } from '../../services/infra/queue/in-process-queue.js';
import type { Embedder } from '../../services/providers/embeddings/embedder.js';
import { createLocalEmbedder } from '../../services/providers/embeddings/local-embedder.js';
import { waitFor } from '../support/databases/redis.js';
import { seedSession } from '../support/service/seed-memory.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';
import { silentLog } from '../support/service/test-worker.js';

const HOUR = 3_600_000;

describe('re-embedding job', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ EMBEDDINGS_MODEL: 'local-hash-v2', EMBEDDINGS_DIMENSIONS: '256', REEMBED_BATCH_SIZE: '40' });
  });
  afterAll(async () => t?.close());

  async function models() {
    const { rows } = await t.admin.query<{ model: string | null; n: number }>(
      'SELECT embedding_model AS model, count(*)::int AS n FROM turns GROUP BY 1 ORDER BY 1',
    );
    return Object.fromEntries(rows.map((r) => [r.model ?? 'none', r.n]));
  }

  /** Queues the re-embedding as a start does, waits for the job, and checks a second start queues none. */
  async function reEmbedAsAtStart(embedder: Embedder) {
    const queue = new InProcessQueue({
      config: t.config,
      log: silentLog,
      processors: (q) => createProcessors({ config: t.config, db: t.database.scoped, embedder, clock: () => new Date(), queue: q }),
    });
    try {
      expect(await enqueueReEmbeddingIfNeeded(t.database.scoped, queue, embedder, silentLog)).toBe(true);
      await waitFor(async () => (await queue.counts()).completed === 1, 20_000, 're-embedding');
      expect((await queue.counts()).failed).toBe(0);
      expect(await enqueueReEmbeddingIfNeeded(t.database.scoped, queue, embedder, silentLog)).toBe(false);
    } finally {
      await queue.close();
    }
  }

  it('when the active model differs from what turns carry, then a job re-embeds them all in batches, and search sees only the active model meanwhile', async () => {
    const embedder = createLocalEmbedder('local-hash-v2', 256);
    const sessionId = await seedSession(t.admin, {
      userId: 'reader',
      turns: 100,
      expiresAt: new Date(Date.now() + HOUR),
      model: 'local-hash-v1@384',
    });
    await t.admin.query(`UPDATE turns SET embedding = NULL, embedding_model = NULL WHERE session_id = $1 AND turn_number <= 5`, [
      sessionId,
    ]);
    expect(await models()).toEqual({ 'local-hash-v1@384': 95, none: 5 });

    // Before re-embedding, a search with the new model finds nothing: models never mix.
    const [query] = await embedder.embed(['Question 3 from reader about sales']);
    const search = () =>
      retrieveMemory(t.admin, {
        identity: { tenantId: 'default', userId: 'reader', roles: [] },
        now: new Date(),
        windowSize: 0,
        k: 3,
        minSimilarity: -1,
        embedding: query!,
        embeddingModel: embedder.modelId,
        scope: {},
      });
    expect((await search()).similar).toEqual([]);

    await reEmbedAsAtStart(embedder);
    expect(await models()).toEqual({ 'local-hash-v2@256': 100 });
    const { rows } = await t.admin.query('SELECT DISTINCT vector_dims(embedding) AS dims FROM turns');
    expect(rows).toEqual([{ dims: 256 }]);
    expect((await search()).similar).toHaveLength(3);
  });

  it('when verified pairs carry another model, then the job re-embeds the live ones with a question and recall finds them again', async () => {
    const embedder = createLocalEmbedder('local-hash-v2', 256);
    const [oldVector] = await createLocalEmbedder('local-hash-v1', 384).embed(['How many singers are there?']);
    const pair = (id: string, question: string | null, retired: boolean) =>
      t.admin.query(
        `INSERT INTO verified_pairs (tenant_id, pair_id, question, sql_query, tables_used, vdp_database_names, embedding, embedding_model,
           search_terms, author_user_id, promoted_via, promoted_at, adopted_at, retired_at)
         VALUES ('pairs-tenant', $1, $2, 'SELECT count(*) FROM singer', '{singer}', '{concert_singer}',
           CASE WHEN $2::text IS NULL THEN NULL ELSE $3::vector END, CASE WHEN $2::text IS NULL THEN NULL ELSE 'local-hash-v1@384' END,
           NULL, NULL, 'admin', now(), now(), CASE WHEN $4 THEN now() END)`,
        [id, question, `[${oldVector!.join(',')}]`, retired],
      );
    await pair('00000000-0000-4000-8000-000000000001', 'How many singers are there?', false);
    await pair('00000000-0000-4000-8000-000000000002', 'How many singers are there?', true);
    // An adopted pair whose author was erased: no question, so nothing to embed.
    await pair('00000000-0000-4000-8000-000000000003', null, false);

    const [query] = await embedder.embed(['How many singers do we have?']);
    const recall = () =>
      retrieveMemory(t.admin, {
        identity: { tenantId: 'pairs-tenant', userId: 'colleague', roles: [] },
        now: new Date(),
        windowSize: 0,
        k: 3,
        minSimilarity: 0.25,
        embedding: query!,
        embeddingModel: embedder.modelId,
        scope: { requested: ['concert_singer'] },
        verifiedPairs: { k: 3, minSimilarity: null },
      });
    expect((await recall()).pairs).toEqual([]);

    await reEmbedAsAtStart(embedder);
    const { rows } = await t.admin.query(
      `SELECT pair_id, embedding_model, vector_dims(embedding) AS dims, search_terms IS NOT NULL AS has_terms
       FROM verified_pairs WHERE tenant_id = 'pairs-tenant' ORDER BY pair_id`,
    );
    expect(rows).toEqual([
      { pair_id: '00000000-0000-4000-8000-000000000001', embedding_model: 'local-hash-v2@256', dims: 256, has_terms: true },
      { pair_id: '00000000-0000-4000-8000-000000000002', embedding_model: 'local-hash-v1@384', dims: 384, has_terms: false },
      { pair_id: '00000000-0000-4000-8000-000000000003', embedding_model: null, dims: null, has_terms: false },
    ]);
    expect((await recall()).pairs.map((p) => p.sql_query)).toEqual(['SELECT count(*) FROM singer']);
  });

  it('when turns of the active model were stored before lexical terms existed, then the job writes their terms and keeps their vectors', async () => {
    const sessionId = await seedSession(t.admin, {
      userId: 'older',
      turns: 12,
      expiresAt: new Date(Date.now() + HOUR),
      model: 'local-hash-v2@256',
    });
    const before = await t.admin.query('SELECT turn_number, embedding::text FROM turns WHERE session_id = $1 ORDER BY 1', [sessionId]);
    const result = await runReEmbedding(
      { db: t.database.scoped, embedder: createLocalEmbedder('local-hash-v2', 256), log: silentLog, batchSize: 5 },
      { modelId: 'local-hash-v2@256' },
    );
    expect(result).toMatchObject({ embedded: 0, skipped: 0 });
    const after = await t.admin.query('SELECT turn_number, embedding::text FROM turns WHERE session_id = $1 ORDER BY 1', [sessionId]);
    expect(after.rows).toEqual(before.rows);
    const { rows } = await t.admin.query<{ tables: string }>(
      `SELECT strip(ts_filter(search_terms, '{a}'))::text AS tables FROM turns WHERE session_id = $1 AND turn_number = 3`,
      [sessionId],
    );
    // sales_3 (from the SQL) and sales (tables_used), split at the underscore; the single digit is no term.
    expect(rows).toEqual([{ tables: "'sales'" }]);
    const { rows: missing } = await t.admin.query('SELECT count(*)::int AS n FROM turns WHERE search_terms IS NULL');
    expect(missing).toEqual([{ n: 0 }]);
  });

  it('when turns carry lexical terms of an older version, then a job is queued and writes them again, keeping their vectors', async () => {
    const embedder = createLocalEmbedder('local-hash-v2', 256);
    const sessionId = await seedSession(t.admin, {
      userId: 'earlier-terms',
      turns: 8,
      expiresAt: new Date(Date.now() + HOUR),
      model: 'local-hash-v2@256',
    });
    // The terms as written before the whole table names and the version lexeme were added.
    await t.admin.query(`UPDATE turns SET search_terms = '''sales'':1A ''region'':2B' WHERE session_id = $1`, [sessionId]);
    const vectors = () => t.admin.query('SELECT turn_number, embedding::text FROM turns WHERE session_id = $1 ORDER BY 1', [sessionId]);
    const before = await vectors();

    await reEmbedAsAtStart(embedder);
    expect((await vectors()).rows).toEqual(before.rows);
    const { rows } = await t.admin.query<{ whole: string }>(
      `SELECT strip(ts_filter(search_terms, '{d}'))::text AS whole FROM turns WHERE session_id = $1 AND turn_number = 3`,
      [sessionId],
    );
    expect(rows).toEqual([{ whole: "'table:sales' 'table:sales_3' 'terms:3'" }]);
  });

  it('when a remote provider is rate-limited, then batches are paced to REEMBED_MAX_PER_MINUTE', async () => {
    await seedSession(t.admin, { userId: 'paced', turns: 30, expiresAt: new Date(Date.now() + HOUR), model: 'old@384' });
    const waits: number[] = [];
    const result = await runReEmbedding(
      {
        db: t.database.scoped,
        embedder: createLocalEmbedder('local-hash-v2', 256),
        log: silentLog,
        batchSize: 10,
        maxPerMinute: 600, // 10 texts per second: one batch of 10 per second
        sleep: async (ms) => void waits.push(ms),
      },
      { modelId: 'local-hash-v2@256' },
    );
    expect(result).toMatchObject({ embedded: 30 });
    // Three full batches, each followed by the rest of its one-second slot (minus the time it took).
    expect(waits.length).toBe(3);
    for (const ms of waits) {
      expect(ms).toBeGreaterThan(500);
      expect(ms).toBeLessThanOrEqual(1000);
    }
  });
});
