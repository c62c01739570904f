import { hasTurnsOfOtherModels, nextTurnsToEmbed, saveEmbeddings } from '../../db/repositories/reembedding.js';
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

/** At start: queue a re-embedding when stored turns carry another model than the active one, or older lexical terms. */
export async function enqueueReEmbeddingIfNeeded(
  db: ScopedDatabase,
  queue: JobQueue,
  embedder: Embedder,
  log: JobLogger,
): Promise<boolean> {
  if (!(await hasTurnsOfOtherModels(db.asMaintenance(), staleFor(embedder.modelId)))) return false;
  log.info({ model: embedder.modelId }, 'turns carry another embedding model or older lexical terms: queueing re-embedding');
  await queue.enqueue('re-embed', { modelId: embedder.modelId });
  return true;
}

/**
 * Re-embeds every turn not embedded with the active model, and writes the lexical terms of every
 * turn that lacks them (turns stored before migration 008) or has an older version of them, batch by batch in primary-key order
 * (docs/design.md §7). Search already compares only embeddings of the active model, so until a turn is
 * re-embedded it is simply not found by similarity; nothing mixes models. A job for a model that is
 * no longer the active one stops at once (a newer deployment will queue its own).
 */
export async function runReEmbedding(deps: ReEmbedDeps, job: { modelId: string }) {
  if (job.modelId !== deps.embedder.modelId) {
    deps.log.warn({ wanted: job.modelId, active: deps.embedder.modelId }, 're-embedding for an inactive model skipped');
    return { embedded: 0, skipped: 0, batches: 0 };
  }
  const sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  const minBatchMs = deps.maxPerMinute ? (deps.batchSize / deps.maxPerMinute) * 60_000 : 0;
  let after = null;
  let embedded = 0;
  let skipped = 0;
  let batches = 0;
  for (;;) {
    const started = performance.now();
    const turns = await nextTurnsToEmbed(deps.db.asMaintenance(), staleFor(job.modelId), after, deps.batchSize);
    if (!turns.length) break;
    // Turns already of the model only need their lexical terms: they are not sent to the embedder.
    const stale = turns.filter((t) => t.embedding_model !== job.modelId);
    const vectors = stale.length
      ? await deps.embedder.embed(
          stale.map((t) => embeddedTurnText({ question: t.question, sqlQuery: t.sql_query, tablesUsed: t.tables_used, answer: t.answer })),
        )
      : [];
    const newVector = new Map(stale.map((t, i) => [t, vectors[i] ?? null]));
    const batch = turns.map((t) => ({
      key: t,
      embedding: newVector.get(t) ?? null,
      searchTerms: turnSearchTerms({ question: t.question, sqlQuery: t.sql_query, tablesUsed: t.tables_used }),
    }));
    await saveEmbeddings(deps.db.asMaintenance(), job.modelId, batch);
    const embeddedNow = batch.filter((b) => b.embedding).length;
    embedded += embeddedNow;
    skipped += stale.length - embeddedNow;
    batches += 1;
    after = turns.at(-1)!;
    deps.log.info({ embedded, skipped, batches }, 're-embedding batch');
    if (turns.length < deps.batchSize) break;
    const wait = minBatchMs - (performance.now() - started);
    if (wait > 0) await sleep(wait);
  }
  return { embedded, skipped, batches };
}
