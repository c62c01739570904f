import {
  hasStaleEmbeddings,
  nextPairsToEmbed,
  nextTurnsToEmbed,
  type PairKey,
  saveEmbeddings,
  savePairEmbeddings,
  type TurnToEmbed,
} from '../../db/repositories/reembedding.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import type { Embedder } from '../../providers/embeddings/embedder.js';
import type { JobLogger, JobQueue } from '../job-queue.js';
import { TERMS_VERSION_QUERY, turnSearchTerms } from '../search-terms/lexical-terms.js';
import { embeddedTurnText } from '../turns/turn-embedding.js';

export interface ReEmbedDeps {
  db: ScopedDatabase;
  embedder: Embedder;
  log: JobLogger;
  batchSize: number;
  /** Texts per minute sent to a remote provider; undefined for the local embedder. */
  maxPerMinute?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** The turns that need work for a model: of another model, or without this version's lexical terms. */
const staleFor = (modelId: string) => ({ modelId, termsVersion: TERMS_VERSION_QUERY });

/** At start: queue a re-embedding when stored turns or verified pairs carry another model than the active one, or older lexical terms. */
export async function enqueueReEmbeddingIfNeeded(
  db: ScopedDatabase,
  queue: JobQueue,
  embedder: Embedder,
  log: JobLogger,
): Promise<boolean> {
  if (!(await hasStaleEmbeddings(db.asMaintenance(), staleFor(embedder.modelId)))) return false;
  log.info(
    { model: embedder.modelId },
    'turns or verified pairs carry another embedding model or older lexical terms: queueing re-embedding',
  );
  await queue.enqueue('re-embed', { modelId: embedder.modelId });
  return true;
}

interface Stale<Row> {
  row: Row;
  embeddingModel: string | null;
  /** What the embedder reads, and the lexical terms written beside it. */
  text: string;
  searchTerms: string;
}

interface BatchSource<Row> {
  next(after: Row | null): Promise<Stale<Row>[]>;
  save(batch: { key: Row; embedding: number[] | null; searchTerms: string }[]): Promise<unknown>;
}

interface Progress {
  embedded: number;
  skipped: number;
  batches: number;
}

/**
 * Re-embeds every turn, then every live verified pair, not embedded with the active model, and writes
 * the lexical terms of every one that lacks them (turns stored before migration 008) or has an older
 * version of them, batch by batch in primary-key order (docs/design.md §7). Search already compares
 * only embeddings of the active model, so until a row is re-embedded it is simply not found by
 * similarity; nothing mixes models. A pair keeps no answer, so its text is embedded without one, as an
 * admin's rewrite of its question is. A job for a model that is no longer the active one stops at once
 * (a newer deployment will queue its own).
 */
export async function runReEmbedding(deps: ReEmbedDeps, job: { modelId: string }) {
  if (job.modelId !== deps.embedder.modelId) {
    deps.log.warn({ wanted: job.modelId, active: deps.embedder.modelId }, 're-embedding for an inactive model skipped');
    return { embedded: 0, skipped: 0, batches: 0, pairs: 0 };
  }
  const db = deps.db.asMaintenance();
  const target = staleFor(job.modelId);
  const progress: Progress = { embedded: 0, skipped: 0, batches: 0 };
  await reEmbedBatches<TurnToEmbed>(deps, job.modelId, progress, {
    next: async (after) =>
      (await nextTurnsToEmbed(db, target, after, deps.batchSize)).map((t) => ({
        row: t,
        embeddingModel: t.embedding_model,
        text: embeddedTurnText({ question: t.question, sqlQuery: t.sql_query, tablesUsed: t.tables_used, answer: t.answer }),
        searchTerms: turnSearchTerms({ question: t.question, sqlQuery: t.sql_query, tablesUsed: t.tables_used }),
      })),
    save: (batch) => saveEmbeddings(db, job.modelId, batch),
  });
  const ofTurns = progress.embedded;
  await reEmbedBatches<PairKey>(deps, job.modelId, progress, {
    next: async (after) =>
      (await nextPairsToEmbed(db, target, after, deps.batchSize)).map((p) => ({
        row: { tenant_id: p.tenant_id, pair_id: p.pair_id },
        embeddingModel: p.embedding_model,
        text: embeddedTurnText({ question: p.question, sqlQuery: p.sql_query, tablesUsed: p.tables_used, answer: '' }),
        searchTerms: turnSearchTerms({ question: p.question, sqlQuery: p.sql_query, tablesUsed: p.tables_used }),
      })),
    save: (batch) => savePairEmbeddings(db, job.modelId, batch),
  });
  return { ...progress, pairs: progress.embedded - ofTurns };
}

async function reEmbedBatches<Row>(deps: ReEmbedDeps, modelId: string, progress: Progress, source: BatchSource<Row>) {
  const sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  const minBatchMs = deps.maxPerMinute ? (deps.batchSize / deps.maxPerMinute) * 60_000 : 0;
  let after: Row | null = null;
  for (;;) {
    const started = performance.now();
    const rows = await source.next(after);
    if (!rows.length) return;
    // Rows already of the model only need their lexical terms: they are not sent to the embedder.
    const stale = rows.filter((r) => r.embeddingModel !== modelId);
    const vectors = stale.length ? await deps.embedder.embed(stale.map((r) => r.text)) : [];
    const newVector = new Map(stale.map((r, i) => [r, vectors[i] ?? null]));
    const batch = rows.map((r) => ({ key: r.row, embedding: newVector.get(r) ?? null, searchTerms: r.searchTerms }));
    await source.save(batch);
    const embeddedNow = batch.filter((b) => b.embedding).length;
    progress.embedded += embeddedNow;
    progress.skipped += stale.length - embeddedNow;
    progress.batches += 1;
    after = rows.at(-1)!.row;
    deps.log.info({ ...progress }, 're-embedding batch');
    if (rows.length < deps.batchSize) return;
    const wait = minBatchMs - (performance.now() - started);
    if (wait > 0) await sleep(wait);
  }
}
