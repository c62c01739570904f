import { createHash } from 'node:crypto';
import type { Config } from '../../config/config.js';
import type { JobKind, JobPayloads } from '../../core/job-queue.js';

/** Retry and retention per job kind, shared by the BullMQ and the in-process queue. */
export interface JobPolicy {
  attempts: number;
  backoffMs: number;
  /** Completed jobs kept for inspection (count, and seconds for kinds whose payload names a user). */
  keepCompleted: { count: number; ageSeconds?: number };
  keepFailed: number;
  /** At most one waiting or running job per key (one summarization per session at a time). */
  dedupKey?: string;
  /** A stable id, so enqueueing the same request twice makes one job. */
  jobId?: string;
}

export function jobPolicy<K extends JobKind>(kind: K, data: JobPayloads[K], config: Config): JobPolicy {
  const retry = { attempts: config.JOB_ATTEMPTS, backoffMs: config.JOB_BACKOFF_MS };
  switch (kind) {
    case 'cleanup':
      // It runs again at the next interval anyway: a few quick retries are enough.
      return {
        attempts: Math.min(3, config.JOB_ATTEMPTS),
        backoffMs: config.JOB_BACKOFF_MS,
        keepCompleted: { count: 50 },
        keepFailed: 200,
      };
    case 'summarize': {
      const { tenantId, userId, sessionId } = data as JobPayloads['summarize'];
      // Payloads name a user: keep completed ones briefly; the key is hashed so no user id is in a key name.
      return {
        ...retry,
        keepCompleted: { count: 1000, ageSeconds: 3600 },
        keepFailed: 1000,
        dedupKey: `summarize-${digest(tenantId, userId, sessionId)}`,
      };
    }
    case 'gdpr-export':
    case 'gdpr-erase': {
      const { requestId } = data as JobPayloads['gdpr-export'];
      return { ...retry, keepCompleted: { count: 1000 }, keepFailed: 1000, jobId: `${kind}-${requestId}` };
    }
    case 're-embed':
      return {
        ...retry,
        keepCompleted: { count: 20 },
        keepFailed: 100,
        dedupKey: `re-embed-${digest((data as JobPayloads['re-embed']).modelId)}`,
      };
    default:
      throw new Error(`unknown job kind ${String(kind)}`);
  }
}

function digest(...parts: string[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}
