import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../services/config/config.js';
import { tracingState } from '../../../../services/core/tracing.js';
import { startTracing } from '../../../../services/infra/tracing.js';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

describe('OpenTelemetry tracing of /memoryChat', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: ReturnType<typeof startTracing>;
  let t: TestApp;
  let upstream: FakeUpstream;

  beforeAll(async () => {
    tracing = startTracing(loadConfig({}), new SimpleSpanProcessor(exporter));
    ({ t, upstream } = await startServiceWithUpstream());
  });
  afterAll(async () => {
    await stopServiceWithUpstream({ t, upstream });
    await tracing?.shutdown();
  });

  it("when /memoryChat answers, then its spans form one trace and the answerer's traceparent belongs to it", async () => {
    const question = 'Show me total sales by region for 2024 (secret-question-text)';
    const res = await t.request('POST', '/memoryChat', { token: t.token('traced-user'), body: { question } });
    expect(res.status).toBe(200);

    const traceparent = String(upstream.requests.at(-1)?.headers.traceparent);
    const [, traceId, parentSpanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(traceparent) ?? [];
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    const byName = new Map(spans.map((s) => [s.name, s]));
    expect([...byName.keys()].sort()).toEqual(
      ['POST /memoryChat', 'answerer.answer', 'auth', 'embedding', 'memory.retrieval', 'memory.store'].sort(),
    );
    expect(byName.get('answerer.answer')?.spanContext().spanId).toBe(parentSpanId);
    const root = byName.get('POST /memoryChat')!;
    for (const name of ['auth', 'answerer.answer', 'embedding', 'memory.retrieval', 'memory.store']) {
      expect(byName.get(name)?.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    }
    // No question and no user id in attributes unless OTEL_CAPTURE_CONTENT=true.
    const attributes = JSON.stringify(spans.map((s) => s.attributes));
    expect(attributes).not.toContain('secret-question-text');
    expect(attributes).not.toContain('traced-user');
  });

  it('when a bot uses the memory API, then recording, context and search have their own spans under each request', async () => {
    const token = t.token('api-traced-user');
    const spansOf = (route: string) => {
      const root = exporter
        .getFinishedSpans()
        .filter((s) => s.name === route)
        .at(-1);
      expect(root, route).toBeDefined();
      return exporter
        .getFinishedSpans()
        .filter((s) => s.parentSpanContext?.spanId === root!.spanContext().spanId)
        .map((s) => s.name)
        .sort();
    };
    expect((await t.request('POST', '/sessions/turns', { token, body: { question: 'Sales by region?', answer: 'Here.' } })).status).toBe(
      201,
    );
    expect(spansOf('POST /sessions/turns')).toEqual(['auth', 'embedding', 'memory.store']);
    expect((await t.request('POST', '/memory/context', { token, body: { question: 'And by year?' } })).status).toBe(200);
    expect(spansOf('POST /memory/context')).toEqual(['auth', 'memory.retrieval']);
    expect((await t.request('POST', '/memory/search', { token, body: { query: 'sales' } })).status).toBe(200);
    expect(spansOf('POST /memory/search')).toEqual(['auth', 'embedding', 'memory.search']);
  });

  it('when OTEL_CAPTURE_CONTENT is on, then the answerer span carries the question sent and the SQL returned', async () => {
    tracingState.captureContent = true;
    try {
      const question = 'Show me total sales by region for 2024 (captured-question-text)';
      expect((await t.request('POST', '/memoryChat', { token: t.token('captured-user'), body: { question } })).status).toBe(200);
      const span = exporter
        .getFinishedSpans()
        .filter((s) => s.name === 'answerer.answer')
        .at(-1);
      expect(span?.attributes['memorychat.question']).toContain('captured-question-text');
      expect(span?.attributes['memorychat.sql_query']).toMatch(/^SELECT /);
    } finally {
      tracingState.captureContent = false;
    }
  });
});
