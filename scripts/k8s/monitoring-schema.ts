// kubernetes-models has no schemas for the Prometheus Operator's custom resources, so the PodMonitor
// in k8s/monitoring is validated against this schema of our own: the part of the CRD
// monitoring.coreos.com/v1 PodMonitor that memorychat uses, with field names and types as the CRD
// defines them (prometheus-operator's Documentation/api.md). Unlike the API server, which prunes unknown
// fields of a custom resource silently, it refuses them, so that a misspelt field cannot pass unnoticed.
import Type, { type TSchema } from 'typebox';
import { Value } from 'typebox/value';

const strict = { additionalProperties: false };
// The CRD's Duration pattern (e.g. 30s, 1m, 1h30m).
const Duration = Type.String({ pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$' });

const LabelSelector = Type.Object(
  {
    matchLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Type.String(),
            operator: Type.Union([Type.Literal('In'), Type.Literal('NotIn'), Type.Literal('Exists'), Type.Literal('DoesNotExist')]),
            values: Type.Optional(Type.Array(Type.String())),
          },
          strict,
        ),
      ),
    ),
  },
  strict,
);

const PodMetricsEndpoint = Type.Object(
  {
    port: Type.Optional(Type.String({ minLength: 1 })),
    portNumber: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    path: Type.Optional(Type.String({ pattern: '^/' })),
    scheme: Type.Optional(Type.Union([Type.Literal('http'), Type.Literal('https')])),
    interval: Type.Optional(Duration),
    scrapeTimeout: Type.Optional(Duration),
    honorLabels: Type.Optional(Type.Boolean()),
  },
  strict,
);

const PodMonitor = Type.Object({
  apiVersion: Type.Literal('monitoring.coreos.com/v1'),
  kind: Type.Literal('PodMonitor'),
  metadata: Type.Object({ name: Type.String({ minLength: 1 }) }),
  spec: Type.Object(
    {
      selector: LabelSelector,
      namespaceSelector: Type.Optional(
        Type.Object({ any: Type.Optional(Type.Boolean()), matchNames: Type.Optional(Type.Array(Type.String())) }, strict),
      ),
      podMetricsEndpoints: Type.Array(PodMetricsEndpoint, { minItems: 1 }),
      jobLabel: Type.Optional(Type.String()),
      podTargetLabels: Type.Optional(Type.Array(Type.String())),
      sampleLimit: Type.Optional(Type.Integer({ minimum: 0 })),
    },
    strict,
  ),
});

const SCHEMAS: Record<string, TSchema> = { 'monitoring.coreos.com/v1 PodMonitor': PodMonitor };

/** The schema of ours for this object's kind, if it is one of the custom resources above. */
export function customResourceSchema(body: Record<string, any>): TSchema | undefined {
  return SCHEMAS[`${body.apiVersion} ${body.kind}`];
}

/** Each problem as `/spec/podMetricsEndpoints/0/intervall: must not …`; empty when valid. */
export function checkCustomResource(schema: TSchema, body: unknown): string[] {
  if (Value.Check(schema, body)) return [];
  return [...Value.Errors(schema, body)].map((e) => {
    const extra = (e.params as { additionalProperties?: string[] }).additionalProperties;
    return `${e.instancePath || '/'}: ${e.message}${extra ? ` (${extra.join(', ')})` : ''}`;
  });
}
