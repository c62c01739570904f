import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Config } from '../config/config.js';
import { tracingState } from '../core/tracing.js';

/**
 * Turns OpenTelemetry tracing on when configured (OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint with
 * OTEL_TRACES_EXPORTER unset), or with the given span processor (tests). Registers the W3C trace-context
 * propagator and an AsyncLocalStorage context manager. Undefined when tracing stays off.
 */
export function startTracing(config: Config, processor?: SpanProcessor, serviceName = 'memorychat') {
  if (!processor && !config.tracingEnabled) return undefined;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.OTEL_SERVICE_NAME ?? serviceName }),
    // The exporter reads the standard OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout) itself.
    spanProcessors: [processor ?? new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  tracingState.enabled = true;
  tracingState.captureContent = config.OTEL_CAPTURE_CONTENT;
  return {
    /**
     * Ends the spans' export and takes back what register() set for the whole process (the tracer
     * provider, the propagator, the context manager): OpenTelemetry's API refuses a second registration
     * while one stands, so a later startTracing in the same process (tests) would export nothing.
     */
    async shutdown() {
      tracingState.enabled = false;
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
