import { type Attributes, context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ChatLlm, TokenUsage } from '../providers/llm/chat-llm.js';
import type { JobKind, Processors } from './job-queue.js';

/**
 * Spans around memory's steps (docs/tracing.md). Off unless an entry point turned tracing on
 * (services/infra/tracing.ts): then `traced` calls `work` directly, so the hot path allocates nothing.
 */
export const tracingState = { enabled: false, captureContent: false };

const tracer = () => trace.getTracer('memorychat');

export function traced<T>(
  name: string,
  attributes: Attributes,
  work: (span?: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!tracingState.enabled) return work();
  return tracer().startActiveSpan(name, { attributes, kind }, context.active(), async (span) => {
    try {
      return await work(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Adds what a user asked or got to a span, only with OTEL_CAPTURE_CONTENT=true: otherwise no
 * question or SQL is in any attribute (docs/tracing.md).
 */
export function recordContent(span: Span, content: Record<string, string | null | undefined>): void {
  if (!tracingState.captureContent) return;
  for (const [key, value] of Object.entries(content)) if (value) span.setAttribute(key, value);
}

/**
 * An LLM whose calls are `chat` spans with GenAI semantic-convention attributes (provider, model,
 * max tokens), so Langfuse and similar backends show them as generations. Prompts and completions are
 * added only with OTEL_CAPTURE_CONTENT=true: they hold the user's questions.
 */
export function tracedLlm(llm: ChatLlm, purpose: 'rewrite' | 'summary'): ChatLlm {
  const [provider = llm.name, model = llm.name] = llm.name.split(':');
  const attributes = (maxTokens: number) => ({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': provider,
    'gen_ai.request.model': model,
    'gen_ai.request.max_tokens': maxTokens,
    'memorychat.llm_purpose': purpose,
  });
  const recordUsage = (span: Span | undefined, usage: TokenUsage) => {
    span?.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
    span?.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
  };
  return {
    name: llm.name,
    completeStructured: (request) =>
      traced(`chat ${model}`, attributes(request.maxTokens), async (span) => {
        const output = await llm.completeStructured(request);
        recordUsage(span, output.usage);
        return output;
      }),
    complete: (request) =>
      traced(`chat ${model}`, attributes(request.maxTokens), async (span) => {
        const output = await llm.complete(request);
        recordUsage(span, output.usage);
        if (span && tracingState.captureContent) {
          span.setAttribute(
            'gen_ai.input.messages',
            JSON.stringify([
              { role: 'system', content: request.system },
              { role: 'user', content: request.user },
            ]),
          );
          span.setAttribute('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', content: output.text }]));
        }
        return output;
      }),
  };
}

/** W3C trace context as it travels in a job's payload (`traceContext`): ids only, never content. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/**
 * The job payload with the active trace context added as `traceContext`, so that the job's span
 * joins the trace of the request that queued it, across Redis, the Postgres outbox and a worker
 * process. Unchanged when tracing is off or no span is active.
 */
export function withTraceContext<T extends object>(data: T): T {
  if (!tracingState.enabled) return data;
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? { ...data, traceContext: carrier } : data;
}

/**
 * Each job run is a `job <kind>` consumer span: a child of the context its payload carries
 * (withTraceContext), or the root of a trace of its own for scheduled jobs (cleanup).
 */
export function tracedProcessors(processors: Processors): Processors {
  const wrapped = {} as Record<JobKind, (data: unknown, ctx: never) => Promise<unknown>>;
  for (const kind of Object.keys(processors) as JobKind[]) {
    const run = processors[kind] as (data: unknown, ctx: never) => Promise<unknown>;
    wrapped[kind] = (data, ctx) => {
      const job = () =>
        traced(
          `job ${kind}`,
          { 'memorychat.job_kind': kind, 'memorychat.job_attempt': (ctx as { attempt: number }).attempt },
          () => run(data, ctx),
          SpanKind.CONSUMER,
        );
      if (!tracingState.enabled) return job();
      const carrier = (data as { traceContext?: TraceCarrier } | undefined)?.traceContext;
      return context.with(carrier ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT, job);
    };
  }
  return wrapped as unknown as Processors;
}
