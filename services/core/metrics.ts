import client from 'prom-client';
import { AppError } from '../model/errors.js';
import type { Answer, Answerer } from '../providers/answerers/answerer.js';
import type { Embedder } from '../providers/embeddings/embedder.js';
import { JOB_KINDS, type JobContext, type JobKind, PermanentJobError, type Processors } from './job-queue.js';

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * The service's Prometheus metrics, in a registry of their own (one per app or worker), so that
 * several instances in one process (tests) do not collide.
 */
export function createMetrics() {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const opts = { registers: [registry] };
  return {
    registry,
    httpDuration: new client.Histogram({
      name: 'memorychat_http_request_duration_seconds',
      help: 'HTTP request latency by route and status',
      labelNames: ['method', 'route', 'status_code'],
      buckets: SECONDS,
      ...opts,
    }),
    memoryRetrieval: new client.Histogram({
      name: 'memorychat_memory_retrieval_seconds',
      help: 'Time to embed the question and read the window, similar turns and summary',
      buckets: SECONDS,
      ...opts,
    }),
    contextTokens: new client.Histogram({
      name: 'memorychat_context_tokens',
      help: 'Tokens of memory context added to a request',
      buckets: [0, 50, 100, 250, 500, 1000, 2000, 4000, 8000, 16000],
      ...opts,
    }),
    memoryRequests: new client.Counter({
      name: 'memorychat_memory_requests_total',
      help: 'Requests that looked up memory; hit="true" when history or similar turns were used (hit rate = hit / all)',
      labelNames: ['hit'],
      ...opts,
    }),
    storeFailures: new client.Counter({
      name: 'memorychat_memory_store_failures_total',
      help: 'Memory store reads and writes that failed: effect="degraded" when /memoryChat answered without memory, "failed" when a request was refused with 503 memory-store-unavailable',
      labelNames: ['effect'],
      ...opts,
    }),
    turnsStored: new client.Counter({
      name: 'memorychat_turns_stored_total',
      help: 'Turns written to the memory store, by turn status',
      labelNames: ['status'],
      ...opts,
    }),
    turnsDeleted: new client.Counter({
      name: 'memorychat_turns_deleted_total',
      help: 'Turns deleted by the retention cleanup (reason="retention") and by GDPR erasure (reason="erasure")',
      labelNames: ['reason'],
      ...opts,
    }),
    conversationTurns: new client.Histogram({
      name: 'memorychat_conversation_turns',
      help: 'Turns in the session once a turn is stored in it (conversation length)',
      buckets: [1, 2, 3, 5, 10, 15, 20, 30, 50, 100, 200, 500, 1000],
      ...opts,
    }),
    memoryApplied: new client.Counter({
      name: 'memorychat_memory_applied_total',
      help: '/memoryChat answers by whether memory was used, and why not (reason: applied, use_memory_false, memory_disabled, outside_rollout, memory_unavailable)',
      labelNames: ['applied', 'reason'],
      ...opts,
    }),
    upstreamDuration: new client.Histogram({
      name: 'memorychat_upstream_request_duration_seconds',
      help: 'Answerer latency by outcome',
      labelNames: ['outcome'],
      buckets: SECONDS,
      ...opts,
    }),
    upstreamErrors: new client.Counter({
      name: 'memorychat_upstream_errors_total',
      help: 'Answerer failures by problem code',
      labelNames: ['code'],
      ...opts,
    }),
    embeddingDuration: new client.Histogram({
      name: 'memorychat_embedding_duration_seconds',
      help: 'Embedding latency by model',
      labelNames: ['model'],
      buckets: SECONDS,
      ...opts,
    }),
    jobs: new client.Counter({
      name: 'memorychat_jobs_total',
      help: 'Background job attempts by kind and outcome: completed, retried (failed, another attempt follows) or failed (no attempt follows)',
      labelNames: ['kind', 'outcome'],
      ...opts,
    }),
    jobDuration: new client.Histogram({
      name: 'memorychat_job_duration_seconds',
      help: 'Background job duration by kind',
      labelNames: ['kind'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      ...opts,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

export function instrumentAnswerer(answerer: Answerer, metrics: Metrics): Answerer {
  const timed = async (call: () => Promise<Answer>) => {
    const stop = metrics.upstreamDuration.startTimer();
    try {
      const answer = await call();
      stop({ outcome: answer.status });
      return answer;
    } catch (err) {
      // A streaming client that went away is no upstream failure.
      if ((err as Error).name === 'AbortError') {
        stop({ outcome: 'aborted' });
        throw err;
      }
      const code = err instanceof AppError ? err.code : 'internal-error';
      stop({ outcome: 'error' });
      metrics.upstreamErrors.inc({ code });
      throw err;
    }
  };
  return {
    kind: answerer.kind,
    answer: (request) => timed(() => answerer.answer(request)),
  };
}

export function instrumentEmbedder(embedder: Embedder, metrics: Metrics): Embedder {
  return {
    modelId: embedder.modelId,
    dimensions: embedder.dimensions,
    async embed(texts) {
      const stop = metrics.embeddingDuration.startTimer({ model: embedder.modelId });
      try {
        return await embedder.embed(texts);
      } finally {
        stop();
      }
    },
  };
}

/** Records what one request drew from memory (hit = history or similar turns were used). */
export function recordMemoryUse(
  metrics: Metrics,
  used: { retrievalSeconds: number; contextTokens: number; historyCount: number; similarCount: number },
) {
  metrics.memoryRetrieval.observe(used.retrievalSeconds);
  metrics.contextTokens.observe(used.contextTokens);
  metrics.memoryRequests.inc({ hit: String(used.historyCount + used.similarCount > 0) });
}

/** A turn written to the store: store growth, and the length its conversation reached. */
export function recordTurnStored(metrics: Metrics, turn: { status: string; sessionTurns: number }) {
  metrics.turnsStored.inc({ status: turn.status });
  metrics.conversationTurns.observe(turn.sessionTurns);
}

/** A request refused because the memory store failed (its problem code is `memory-store-unavailable`). */
export function recordRefusal(metrics: Metrics | undefined, code: string) {
  if (code === 'memory-store-unavailable') metrics?.storeFailures.inc({ effect: 'failed' });
}

/**
 * Counts and times every job attempt by kind and outcome. An attempt that fails with another to follow
 * is `retried`; `failed` means the job gave up. Every kind's series start at 0, so that "no cleanup
 * completed in 3 h" is a series at 0, not a missing one (docs/monitoring.md).
 */
export function instrumentProcessors(processors: Processors, metrics: Metrics): Processors {
  for (const kind of JOB_KINDS) for (const outcome of JOB_OUTCOMES) metrics.jobs.inc({ kind, outcome }, 0);
  const wrapped = {} as Record<JobKind, (data: unknown, ctx: JobContext) => Promise<unknown>>;
  for (const kind of Object.keys(processors) as JobKind[]) {
    const run = processors[kind] as (data: unknown, ctx: JobContext) => Promise<unknown>;
    wrapped[kind] = async (data, ctx) => {
      const stop = metrics.jobDuration.startTimer({ kind });
      try {
        const result = await run(data, ctx);
        metrics.jobs.inc({ kind, outcome: 'completed' });
        return result;
      } catch (err) {
        const gaveUp = ctx.finalAttempt || err instanceof PermanentJobError;
        metrics.jobs.inc({ kind, outcome: gaveUp ? 'failed' : 'retried' });
        throw err;
      } finally {
        stop();
      }
    };
  }
  return wrapped as unknown as Processors;
}

const JOB_OUTCOMES = ['completed', 'retried', 'failed'] as const;
