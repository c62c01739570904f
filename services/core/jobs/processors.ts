import type { Config } from '../../config/config.js';
import { markAuditFinished } from '../../db/repositories/gdpr.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import type { Embedder } from '../../providers/embeddings/embedder.js';
import type { ChatLlm } from '../../providers/llm/chat-llm.js';
import { runGdprErase } from '../gdpr/erase.js';
import { runGdprExport } from '../gdpr/export.js';
import { requeueUnfinishedGdprRequests } from '../gdpr/requeue.js';
import { type JobContext, type JobQueue, PermanentJobError, type Processors } from '../job-queue.js';
import { instrumentEmbedder, instrumentProcessors, type Metrics } from '../metrics.js';
import { tracedLlm, tracedProcessors } from '../tracing.js';
import { runReEmbedding } from './re-embedding.js';
import { runRetentionCleanup } from './retention-cleanup.js';
import { summarizationSettingsFrom, summarizeSession } from './summarization.js';

export interface ProcessorDeps {
  config: Config;
  db: ScopedDatabase;
  embedder: Embedder;
  summaryLlm?: ChatLlm;
  clock: () => Date;
  /** Erase removes the user's queued jobs through it; the cleanup queues unfinished GDPR requests again. */
  queue: Pick<JobQueue, 'removeUserJobs' | 'enqueue'>;
  /** Job counts and durations by kind, when given. */
  metrics?: Metrics;
}

const ERASE_BATCH = 500;

/** The job processors, the same for the BullMQ worker and the in-process queue. */
export function createProcessors(deps: ProcessorDeps): Processors {
  const { metrics } = deps;
  const processors = tracedProcessors(
    uninstrumentedProcessors(metrics ? { ...deps, embedder: instrumentEmbedder(deps.embedder, metrics) } : deps),
  );
  return metrics ? instrumentProcessors(processors, metrics) : processors;
}

function uninstrumentedProcessors(deps: ProcessorDeps): Processors {
  const { config, db, clock } = deps;
  // Here rather than at each entry point, so that the worker's summaries are generations too.
  const summaryLlm = deps.summaryLlm && tracedLlm(deps.summaryLlm, 'summary');
  return {
    cleanup: async (_data, ctx) => {
      const cleaned = await runRetentionCleanup({
        db,
        clock,
        log: ctx.log,
        batchSize: config.MEMORY_CLEANUP_BATCH_SIZE,
        accessAuditRetentionMs: config.accessAuditRetentionMs,
      });
      deps.metrics?.turnsDeleted.inc({ reason: 'retention' }, cleaned.turns);
      const gdprRequeued = await requeueUnfinishedGdprRequests({ db, queue: deps.queue, clock, log: ctx.log });
      // The periodic job is where the approximate indexes are kept in step with their rows (db/ann-index-upkeep.ts).
      const annIndexes = await db.maintainAnnIndexes();
      for (const state of annIndexes.filter((s) => s.rebuiltWith !== undefined)) ctx.log.info(state, 'approximate index built again');
      return { ...cleaned, gdprRequeued, annIndexes };
    },

    summarize: (data, ctx) =>
      summarizeSession(
        { db, clock, log: ctx.log, llm: summaryLlm, settings: summarizationSettingsFrom(config) },
        requireIds(data, ['tenantId', 'userId', 'sessionId']),
      ),

    'gdpr-export': (data, ctx) =>
      failingAuditOnLastAttempt(deps, data, ctx, () =>
        runGdprExport({ db, clock, log: ctx.log, exportTtlMs: config.gdprExportTtlMs }, requireIds(data, ['tenantId', 'requestId'])),
      ),

    'gdpr-erase': async (data, ctx) => {
      const erased = await failingAuditOnLastAttempt(deps, data, ctx, () =>
        runGdprErase(
          { db, clock, log: ctx.log, batchSize: ERASE_BATCH, removeQueuedJobs: (t, u) => deps.queue.removeUserJobs(t, u) },
          requireIds(data, ['tenantId', 'requestId']),
        ),
      );
      deps.metrics?.turnsDeleted.inc({ reason: 'erasure' }, erased.turnsDeletedNow);
      return erased.counts;
    },

    're-embed': (data, ctx) =>
      runReEmbedding(
        {
          db,
          embedder: deps.embedder,
          log: ctx.log,
          batchSize: config.REEMBED_BATCH_SIZE,
          maxPerMinute: config.EMBEDDINGS_PROVIDER === 'local' ? undefined : config.REEMBED_MAX_PER_MINUTE,
        },
        requireIds(data, ['modelId']),
      ),
  };
}

/** A payload without its ids can never succeed: fail it at once instead of retrying. */
function requireIds<T extends object>(data: T, keys: (keyof T & string)[]): T {
  for (const key of keys) {
    const value = (data as Record<string, unknown> | null)?.[key];
    if (typeof value !== 'string' || !value) throw new PermanentJobError(`the job payload has no ${key}`);
  }
  return data;
}

/** The requester polls the audit row: when the job gives up, the row must say "failed". */
async function failingAuditOnLastAttempt<T>(
  deps: ProcessorDeps,
  data: { tenantId: string; requestId: string },
  ctx: JobContext,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if ((ctx.finalAttempt || err instanceof PermanentJobError) && data?.tenantId && data?.requestId) {
      const errorCode =
        err instanceof PermanentJobError ? 'bad-request' : ((err as { code?: string }).code ?? (err as Error).name ?? 'error');
      await markAuditFinished(deps.db.asMaintenance(), data.tenantId, data.requestId, {
        status: 'failed',
        now: deps.clock(),
        errorCode: String(errorCode),
      }).catch((auditErr) => ctx.log.error({ err: auditErr }, 'marking the GDPR request failed did not work'));
    }
    throw err;
  }
}
