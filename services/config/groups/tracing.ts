import Type, { type Static } from 'typebox';

/** Tracing: OpenTelemetry spans. */
export const TracingSchema = Type.Object({
  // OpenTelemetry (docs/tracing.md): on with OTEL_TRACES_EXPORTER=otlp, or with an OTLP endpoint and no exporter named.
  OTEL_TRACES_EXPORTER: Type.Optional(Type.Union([Type.Literal('otlp'), Type.Literal('none')])),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://' })),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://' })),
  OTEL_SERVICE_NAME: Type.Optional(Type.String({ minLength: 1 })),
  // Questions, SQL and user ids go into span attributes only when this is true.
  OTEL_CAPTURE_CONTENT: Type.Boolean({ default: false }),
});

export type TracingVariables = Static<typeof TracingSchema>;

/** On with OTEL_TRACES_EXPORTER=otlp, or with an OTLP endpoint and no exporter named. */
export function deriveTracing(raw: TracingVariables) {
  return {
    tracingEnabled:
      raw.OTEL_TRACES_EXPORTER === 'otlp' ||
      (raw.OTEL_TRACES_EXPORTER === undefined && Boolean(raw.OTEL_EXPORTER_OTLP_ENDPOINT ?? raw.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)),
  };
}
