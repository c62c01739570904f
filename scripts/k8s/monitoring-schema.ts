// kubernetes-models has no schemas for the Prometheus Operator's custom resources, so the PodMonitor
// and the PrometheusRule in k8s/monitoring are validated against these schemas of our own: the parts
// of the CRDs monitoring.coreos.com/v1 PodMonitor and PrometheusRule that memorychat uses, with field
// names and types as the CRDs define them (prometheus-operator's Documentation/api.md). Unlike the API server, which prunes unknown
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

// A rule records or alerts (the policy checks it is one of the two); expr is the CRD's IntOrString.
const Rule = Type.Object(
  {
    alert: Type.Optional(Type.String({ minLength: 1 })),
    record: Type.Optional(Type.String({ minLength: 1 })),
    expr: Type.Union([Type.String({ minLength: 1 }), Type.Integer()]),
    for: Type.Optional(Duration),
    keep_firing_for: Type.Optional(Duration),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  strict,
);

const RuleGroup = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    interval: Type.Optional(Duration),
    query_offset: Type.Optional(Duration),
    limit: Type.Optional(Type.Integer({ minimum: 0 })),
    partial_response_strategy: Type.Optional(Type.Union([Type.Literal('abort'), Type.Literal('warn')])),
    labels: Type.Optional(Type.Record(Type.String(), Type.String())),
    rules: Type.Array(Rule, { minItems: 1 }),
  },
  strict,
);

const PrometheusRule = Type.Object({
  apiVersion: Type.Literal('monitoring.coreos.com/v1'),
  kind: Type.Literal('PrometheusRule'),
  metadata: Type.Object({ name: Type.String({ minLength: 1 }) }),
  spec: Type.Object({ groups: Type.Array(RuleGroup, { minItems: 1 }) }, strict),
});

const SCHEMAS: Record<string, TSchema> = {
  'monitoring.coreos.com/v1 PodMonitor': PodMonitor,
  'monitoring.coreos.com/v1 PrometheusRule': PrometheusRule,
};

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
