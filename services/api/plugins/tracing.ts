import { context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { tracingState } from '../../core/tracing.js';

declare module 'fastify' {
  interface FastifyRequest {
    otelSpan?: Span;
  }
}

/**
 * One server span per request, child of the caller's W3C `traceparent` when sent; the handler runs in
 * its context, so memory's spans and the answerer's `traceparent` belong to it. Adds no hook when
 * tracing is off (docs/tracing.md).
 */
export default fp(
  async function tracing(app: FastifyInstance) {
    if (!tracingState.enabled) return;
    const tracer = trace.getTracer('memorychat');
    app.decorateRequest('otelSpan', undefined);
    app.addHook('onRequest', (request, _reply, done) => {
      const parent = propagation.extract(ROOT_CONTEXT, request.headers);
      const route = request.routeOptions.url ?? 'unmatched';
      const span = tracer.startSpan(
        `${request.method} ${route}`,
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': request.method, 'http.route': route, 'memorychat.request_id': request.id },
        },
        parent,
      );
      request.otelSpan = span;
      context.with(trace.setSpan(parent, span), done);
    });
    app.addHook('onResponse', (request, reply, done) => {
      const span = request.otelSpan;
      if (span) {
        span.setAttribute('http.response.status_code', reply.statusCode);
        if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
      done();
    });
  },
  { name: 'tracing' },
);
