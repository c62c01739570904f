import type { Worker } from 'bullmq';
import { pino } from 'pino';
import type { Config } from '../../../services/config/config.js';
import type { JobQueue } from '../../../services/core/job-queue.js';
import { createProcessors } from '../../../services/core/jobs/processors.js';
import type { ScopedDatabase } from '../../../services/db/row-security.js';
import { startBullWorker } from '../../../services/infra/queue/bull-worker.js';
import type { Embedder } from '../../../services/providers/embeddings/embedder.js';
import { createEmbedder } from '../../../services/providers/embeddings/index.js';
import { createSummaryLlm } from '../../../services/providers/llm/summary-llm.js';
import { TEST_REDIS_URL } from '../databases/redis.js';

export const silentLog = pino({ level: 'silent' });

/**
 * An app's settings for summarization through BullMQ: jobs in the test Redis under `queuePrefix`, a
 * session due at its fourth turn (the two newest stay verbatim), summaries by the OpenAI-compatible
 * fake at `llmBaseURL` as model `gpt-summary-test`.
 */
export function summarizingAppSettings(options: { answerUrl: string; llmBaseURL: string; queuePrefix: string }): Record<string, string> {
  return {
    ANSWER_URL: options.answerUrl,
    ANSWER_AUTH: 'none',
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: options.queuePrefix,
    MEMORY_SUMMARIZATION_THRESHOLD: '4',
    MEMORY_MAX_HISTORY_MESSAGES: '2',
    SUMMARY_PROVIDER: 'openai',
    SUMMARY_MODEL: 'gpt-summary-test',
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: options.llmBaseURL,
  };
}

/**
 * A BullMQ worker in the test process over the test's database, as `npm run worker` builds it
 * (same processors, same options), so a test sees each job's effect.
 */
export function startTestWorker(options: {
  config: Config;
  db: ScopedDatabase;
  queue: JobQueue;
  clock?: () => Date;
  embedder?: Embedder;
}): Worker {
  const { config } = options;
  if (!config.REDIS_URL) throw new Error('startTestWorker needs REDIS_URL in the config');
  const processors = createProcessors({
    config,
    db: options.db,
    embedder: options.embedder ?? createEmbedder(config),
    summaryLlm: createSummaryLlm(config),
    clock: options.clock ?? (() => new Date()),
    queue: options.queue,
  });
  return startBullWorker({ config: { ...config, REDIS_URL: config.REDIS_URL }, processors, log: silentLog });
}
