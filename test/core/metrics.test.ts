import { describe, expect, it } from 'vitest';
import { JOB_KINDS, type JobContext, PermanentJobError, type Processors } from '../../services/core/job-queue.js';
import { createMetrics, instrumentProcessors } from '../../services/core/metrics.js';

const log = { info() {}, warn() {}, error() {} };
const attempt = (finalAttempt: boolean): JobContext => ({ jobId: 'j', attempt: 1, finalAttempt, log });

describe('job metrics', () => {
  it('when attempts fail with or without another to follow, then they count as retried or failed, and every kind starts at 0', async () => {
    const metrics = createMetrics();
    const failures = [new Error('database restarting'), new Error('database restarting'), new PermanentJobError('no ids')];
    const processors = instrumentProcessors(
      {
        cleanup: async () => ({ turns: 0 }),
        summarize: async () => {
          throw failures.shift();
        },
      } as unknown as Processors,
      metrics,
    );
    const outcomes = async () =>
      Object.fromEntries((await metrics.jobs.get()).values.map((v) => [`${v.labels.kind} ${v.labels.outcome}`, v.value]));

    expect(Object.keys(await outcomes())).toHaveLength(JOB_KINDS.length * 3);
    expect(Object.values(await outcomes()).every((n) => n === 0)).toBe(true);
    await processors.cleanup({}, attempt(false));
    await expect(processors.summarize({ tenantId: 't', userId: 'u', sessionId: 's' }, attempt(false))).rejects.toThrow();
    await expect(processors.summarize({ tenantId: 't', userId: 'u', sessionId: 's' }, attempt(true))).rejects.toThrow();
    // A permanent error gives up on the first attempt.
    await expect(processors.summarize({ tenantId: 't', userId: 'u', sessionId: 's' }, attempt(false))).rejects.toThrow();

    expect(await outcomes()).toMatchObject({
      'cleanup completed': 1,
      'cleanup failed': 0,
      'summarize retried': 1,
      'summarize failed': 2,
      'summarize completed': 0,
      'gdpr-erase failed': 0,
    });
  });
});
