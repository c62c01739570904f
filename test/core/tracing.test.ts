import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../services/config/config.js';
import type { Processors } from '../../services/core/job-queue.js';
import { tracedLlm, tracedProcessors, tracingState } from '../../services/core/tracing.js';
import { startTracing } from '../../services/infra/tracing.js';

describe('LLM and job spans', () => {
  const exporter = new InMemorySpanExporter();
  const tracing = startTracing(loadConfig({}), new SimpleSpanProcessor(exporter));
  afterAll(() => tracing?.shutdown());
  const llm = tracedLlm(
    {
      name: 'openai:gpt-4o-mini',
      complete: async () => ({ text: 'rewritten question', usage: { inputTokens: 40, outputTokens: 5 } }),
      completeStructured: async () => ({ value: {}, usage: { inputTokens: 12, outputTokens: 3 } }),
    },
    'rewrite',
  );
  const request = { system: 'rewrite it', user: 'what about jane@example.com?', maxTokens: 200 };

  it('when the rewrite LLM is called, then a chat span carries the GenAI attributes and no content', async () => {
    expect((await llm.complete(request)).text).toBe('rewritten question');
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('chat gpt-4o-mini');
    expect(span?.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.request.max_tokens': 200,
      'gen_ai.usage.input_tokens': 40,
      'gen_ai.usage.output_tokens': 5,
      'memorychat.llm_purpose': 'rewrite',
    });
  });

  it('when OTEL_CAPTURE_CONTENT is on, then the prompt and the completion are attributes too', async () => {
    exporter.reset();
    tracingState.captureContent = true;
    await llm.complete(request);
    tracingState.captureContent = false;
    const [span] = exporter.getFinishedSpans();
    expect(String(span?.attributes['gen_ai.input.messages'])).toContain('jane@example.com');
    expect(String(span?.attributes['gen_ai.output.messages'])).toContain('rewritten question');
  });

  it('when a job runs, then it is a span named by its kind', async () => {
    exporter.reset();
    const processors = tracedProcessors({ cleanup: async () => 'cleaned' } as unknown as Processors);
    const ctx = { jobId: 'j1', attempt: 2, finalAttempt: false, log: { info() {}, warn() {}, error() {} } };
    expect(await processors.cleanup({}, ctx)).toBe('cleaned');
    expect(
      exporter.getFinishedSpans().map((s) => [s.name, s.attributes['memorychat.job_kind'], s.attributes['memorychat.job_attempt']]),
    ).toEqual([['job cleanup', 'cleanup', 2]]);
    // Without a carried context the job's span starts a trace of its own.
    expect(exporter.getFinishedSpans()[0]?.parentSpanContext).toBeUndefined();
  });

  it("when tracing is shut down and started again in the same process, then the new start's spans are exported", async () => {
    await tracing?.shutdown();
    const again = new InMemorySpanExporter();
    const restarted = startTracing(loadConfig({}), new SimpleSpanProcessor(again));
    try {
      await llm.complete(request);
      expect(again.getFinishedSpans().map((s) => s.name)).toEqual(['chat gpt-4o-mini']);
    } finally {
      await restarted?.shutdown();
    }
  });
});
