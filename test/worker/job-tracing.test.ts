// A job's span joins the trace of the request that queued it (docs/tracing.md): the W3C context
// travels in the job's payload through Redis to a BullMQ worker.
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../services/config/config.js';
import type { BullJobQueue } from '../../services/infra/queue/bull-queue.js';
import { startTracing } from '../../services/infra/tracing.js';
import { deleteKeysUnder, redisClient, uniquePrefix, waitFor } from '../support/databases/redis.js';
import { startFakeOpenAI } from '../support/fakes/fake-llm.js';
import { type FakeUpstream, startFakeUpstream } from '../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';
import { startTestWorker, summarizingAppSettings } from '../support/service/test-worker.js';

describe('tracing through the job queue (BullMQ)', () => {
  const exporter = new InMemorySpanExporter();
  const redis = redisClient();
  const prefix = uniquePrefix('job-tracing');
  let tracing: ReturnType<typeof startTracing>;
  let upstream: FakeUpstream;
  let llm: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let t: TestApp;
  let worker: Worker | undefined;

  beforeAll(async () => {
    tracing = startTracing(loadConfig({}), new SimpleSpanProcessor(exporter));
    upstream = await startFakeUpstream();
    llm = await startFakeOpenAI(() => 'a summary of the earlier turns');
    t = await startTestApp(summarizingAppSettings({ answerUrl: upstream.answerUrl, llmBaseURL: llm.baseURL, queuePrefix: prefix }));
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    await upstream?.close();
    await llm?.close();
    await tracing?.shutdown();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
  });

  it('when a request queues a summarization, then the job span and its LLM call belong to that request’s trace', async () => {
    const token = t.token('traced-analyst');
    const ask = async (question: string, sessionId?: string, headers: Record<string, string> = {}) => {
      const res = await t.request('POST', '/memoryChat', {
        token,
        headers,
        body: { question, ...(sessionId ? { session_id: sessionId } : {}) },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.conversation_metadata.conversation_id as string;
    };
    const id = await ask('Total sales by region for 2020');
    await ask('What about 2021?', id);
    await ask('What about 2022?', id);
    // The fourth turn makes the session due: this request queues the job, under the caller's trace.
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await ask('What about 2023?', id, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });

    // The job waits in Redis with its ids and the trace context, nothing else.
    const waiting = await (t.app.queue as BullJobQueue).queue.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(waiting.map((j) => j.data)).toEqual([
      {
        tenantId: 'default',
        userId: 'traced-analyst',
        sessionId: id,
        traceContext: { traceparent: expect.stringMatching(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`)) },
      },
    ]);

    worker = startTestWorker({ config: t.config, db: t.database.scoped, queue: t.app.queue });
    const job = await waitFor(async () => exporter.getFinishedSpans().find((s) => s.name === 'job summarize'), 20_000, 'the job span');
    expect(job.spanContext().traceId).toBe(traceId);
    expect(job.kind).toBe(SpanKind.CONSUMER);
    const requestSpans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId && s.name === 'POST /memoryChat');
    expect(requestSpans).toHaveLength(1);
    expect(job.parentSpanContext?.spanId).toBe(requestSpans[0]!.spanContext().spanId);

    const generation = exporter.getFinishedSpans().find((s) => s.name === 'chat gpt-summary-test');
    expect(generation?.spanContext().traceId).toBe(traceId);
    expect(generation?.parentSpanContext?.spanId).toBe(job.spanContext().spanId);
    // The usage the (fake) OpenAI API reported, through the real SDK.
    expect(generation?.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 5 });
  });
});
