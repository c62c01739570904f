import { expect } from 'vitest';
import { waitFor } from '../databases/redis.js';
import type { TestApp } from './test-app.js';

/**
 * Polls a GDPR request (its status URL, or its id) until it has completed or failed, and returns its
 * last status body. Every 250 ms, as a client polls a job: each poll counts against the caller's
 * RATE_LIMIT_PER_MINUTE (120 by default), which polls every 50 ms spent within seconds, so a job
 * that ran longer than that left its later polls, and the download after them, a 429.
 */
export function gdprRequestFinished(
  t: TestApp,
  request: string,
  auth: { token?: string; headers?: Record<string, string> },
  { timeoutMs = 30_000, intervalMs = 250 }: { timeoutMs?: number; intervalMs?: number } = {},
) {
  const url = request.startsWith('/') ? request : `/gdpr/requests/${request}`;
  return waitFor(
    async () => {
      const res = await t.request('GET', url, auth);
      expect(res.status, `GET ${url}`).toBe(200);
      return ['completed', 'failed'].includes(res.body?.status) && res.body;
    },
    timeoutMs,
    `GDPR request ${url}`,
    intervalMs,
  );
}
