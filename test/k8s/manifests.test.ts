import { spawnSync } from 'node:child_process';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkK8s } from '../../scripts/check-k8s.js';
import { checkPolicy } from '../../scripts/k8s/policy.js';
import { podContainers, type Resource, renderKustomization } from '../../scripts/k8s/render.js';
import { checkUnknownFields, validateSchemas } from '../../scripts/k8s/schema.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OVERLAY = path.join(ROOT, 'k8s/overlays/example');

/** A fresh rendering of the example overlay, with helpers to find its objects. */
function renderOverlay() {
  const { resources, errors } = renderKustomization(OVERLAY, ROOT);
  expect(errors).toEqual([]);
  const find = (kind: string, name: string) => resources.find((r) => r.body.kind === kind && r.body.metadata.name === name)!.body;
  const api = find('Deployment', 'memorychat-api');
  return { resources, find, api, apiContainer: podContainers(api)[0]! };
}

async function tempDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-k8s-'));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  return dir;
}

describe('the Kubernetes manifests', () => {
  it('when `npm run k8s:check` runs on k8s/, then it renders the base and the overlay and finds no problem', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-k8s.ts'], { cwd: ROOT, encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/3 kustomizations \(k8s\/base, k8s\/monitoring, k8s\/overlays\/example\), \d+ objects: valid/);
  }, 60_000);

  it('when the overlay is rendered, then its patches, image and namespace are applied to the base', () => {
    const { find, api, apiContainer } = renderOverlay();
    expect(apiContainer.image).toBe('registry.example.com/memorychat:0.1.0');
    expect(apiContainer.resources.limits.memory).toBe('1Gi');
    expect(apiContainer.livenessProbe.httpGet.path).toBe('/healthz');
    expect(find('HorizontalPodAutoscaler', 'memorychat-api').spec.minReplicas).toBe(3);
    expect(api.metadata.namespace).toBe('memorychat');
    expect(find('ConfigMap', 'memorychat-config').data.NODE_ENV).toBe('production');
  });

  it('when a value has the wrong type or a field is misspelt, then the schema checks name the object', async () => {
    const { api, apiContainer, find } = renderOverlay();
    apiContainer.ports[0].containerPort = '8080';
    const service = find('Service', 'memorychat-api');
    service.spec.selectr = service.spec.selector;
    const resources: Resource[] = [
      { source: 'api', body: api },
      { source: 'service', body: service },
    ];

    expect(await validateSchemas(resources)).toEqual([
      expect.stringMatching(/^api: Deployment\/memorychat-api: .*containerPort must be integer/),
    ]);
    const unknown = checkUnknownFields(resources, ROOT);
    expect(unknown).toContainEqual(expect.stringMatching(/^service: Service\/memorychat-api: .*'"selectr"' does not exist/));
    expect(unknown).toContainEqual(expect.stringMatching(/^api: Deployment\/memorychat-api: .*not assignable to type 'number'/));
  }, 30_000);

  it('when an object kind has no Kubernetes schema, then it is reported rather than skipped', async () => {
    const errors = await validateSchemas([{ source: 'x', body: { apiVersion: 'apps/v1', kind: 'Deploymnet', metadata: { name: 'a' } } }]);
    expect(errors).toEqual(['x: no Kubernetes schema for apps/v1 Deploymnet']);
  });

  it('when a Deployment loses its hardening, probes or writable directories, then the policy names each rule', () => {
    const { resources, api, apiContainer } = renderOverlay();
    expect(checkPolicy(resources, { projectRoot: ROOT, complete: true })).toEqual([]);
    delete api.spec.template.spec.securityContext.runAsNonRoot;
    apiContainer.securityContext.readOnlyRootFilesystem = false;
    apiContainer.readinessProbe.httpGet.path = '/healthz';
    apiContainer.command = ['npm', 'start'];
    apiContainer.volumeMounts = apiContainer.volumeMounts.filter((m: { mountPath: string }) => m.mountPath !== '/tmp');
    api.spec.replicas = 2;

    const errors = checkPolicy(resources, { projectRoot: ROOT, complete: true }).join('\n');
    expect(errors).toMatch(/runAsNonRoot/);
    expect(errors).toMatch(/readOnlyRootFilesystem: true/);
    expect(errors).toMatch(/readinessProbe must GET \/readyz/);
    expect(errors).toMatch(/command must start with node/);
    expect(errors).toMatch(/emptyDir at \/tmp/);
    expect(errors).toMatch(/sets replicas/);
  });

  it('when a container runs a compiled file, then the policy checks that its TypeScript source exists (dist/ need not be built)', () => {
    const { resources, apiContainer } = renderOverlay();
    expect(apiContainer.command).toEqual(['node', 'dist/services/api/server.js']);
    apiContainer.command = ['node', 'dist/services/api/serve.js'];
    expect(checkPolicy(resources, { projectRoot: ROOT, complete: true })).toEqual([
      expect.stringMatching(/runs dist\/services\/api\/serve\.js, whose source services\/api\/serve\.ts does not exist/),
    ]);
  });

  it('when the configuration has an unknown or invalid variable or lacks DATABASE_URL, then the policy reports it', () => {
    const { resources, find } = renderOverlay();
    const config = find('ConfigMap', 'memorychat-config');
    config.data.MEMORY_TTL_MODES = 'sliding';
    config.data.ANSWER_TIMEOUT_MS = 'soon';
    delete find('Secret', 'memorychat-secrets').stringData.DATABASE_URL;

    const errors = checkPolicy(resources, { projectRoot: ROOT, complete: true }).join('\n');
    expect(errors).toMatch(/MEMORY_TTL_MODES is not a variable of services\/config\/config.ts/);
    expect(errors).toMatch(/would refuse this configuration: .*ANSWER_TIMEOUT_MS/s);
    expect(errors).toMatch(/DATABASE_URL must be set/);
  });

  it('when the API runs under load, then its memory request is above the RSS measured for it, with a quarter to spare', () => {
    // The compiled API's largest RSS under 50 concurrent /memoryChat clients (k8s/README.md, Memory).
    const measuredPeakBytes = 305e6;
    const { resources } = renderKustomization(path.join(ROOT, 'k8s/base'), ROOT);
    const api = resources.find((r) => r.body.kind === 'Deployment' && r.body.metadata.name === 'memorychat-api')!.body;
    const { requests, limits } = podContainers(api)[0]!.resources;
    const mebibytes = (q: string) => Number(/^(\d+)Mi$/.exec(q)![1]) * 2 ** 20;
    expect(mebibytes(requests.memory)).toBeGreaterThan(measuredPeakBytes * 1.25);
    expect(mebibytes(limits.memory)).toBeGreaterThan(mebibytes(requests.memory));
  });

  it('when a node is drained, then the worker keeps one of its replicas running (PodDisruptionBudget)', () => {
    const { find } = renderOverlay();
    const worker = find('Deployment', 'memorychat-worker');
    const pdb = find('PodDisruptionBudget', 'memorychat-worker');
    expect(pdb.spec.selector.matchLabels).toEqual(worker.spec.selector.matchLabels);
    expect(worker.spec.replicas - pdb.spec.maxUnavailable).toBeGreaterThanOrEqual(1);
  });

  it('when the Prometheus Operator variant is rendered, then its PodMonitor scrapes /metrics on the API and worker pods', () => {
    const { resources, errors } = renderKustomization(path.join(ROOT, 'k8s/monitoring'), ROOT);
    expect(errors).toEqual([]);
    const monitor = resources.find((r) => r.body.kind === 'PodMonitor')!.body;
    const scraped = resources
      .filter((r) => r.body.kind === 'Deployment')
      .filter((r) =>
        monitor.spec.selector.matchExpressions[0].values.includes(r.body.spec.template.metadata.labels['app.kubernetes.io/component']),
      )
      .map((r) => r.body.metadata.name);
    expect(scraped.sort()).toEqual(['memorychat-api', 'memorychat-worker']);
    expect(monitor.spec.podMetricsEndpoints).toEqual([expect.objectContaining({ port: 'http', path: '/metrics' })]);
  });

  it('when a PodMonitor has a misspelt field, a wrong type or a port its pods lack, then our own schema and the policy name it', async () => {
    const { resources } = renderKustomization(path.join(ROOT, 'k8s/monitoring'), ROOT);
    const monitor = resources.find((r) => r.body.kind === 'PodMonitor')!;
    expect(await validateSchemas([monitor])).toEqual([]);
    const endpoint = monitor.body.spec.podMetricsEndpoints[0];
    endpoint.intervall = endpoint.interval;
    endpoint.interval = 30;
    endpoint.port = 'metrics';
    const schemaErrors = (await validateSchemas([monitor])).join('\n');
    expect(schemaErrors).toMatch(/PodMonitor\/memorychat: \/spec\/podMetricsEndpoints\/0.*intervall/);
    expect(schemaErrors).toMatch(/PodMonitor\/memorychat: \/spec\/podMetricsEndpoints\/0\/interval: must be string/);
    const policy = checkPolicy(resources, { projectRoot: ROOT, complete: false }).join('\n');
    expect(policy).toMatch(/PodMonitor\/memorychat: port "metrics" is no container port name of Deployment\/memorychat-api/);
    expect(policy).toMatch(/PodMonitor\/memorychat: port "metrics" is no container port name of Deployment\/memorychat-worker/);
    // Not handed to the TypeScript check, which has no types for it and would report a missing module.
    expect(checkUnknownFields([monitor], ROOT)).toEqual([]);
  }, 30_000);

  it('when the PrometheusRule has a misspelt field, a rule neither alerting nor recording, or an alert without severity, then the check names each', async () => {
    const { resources } = renderKustomization(path.join(ROOT, 'k8s/monitoring'), ROOT);
    const rule = resources.find((r) => r.body.kind === 'PrometheusRule')!;
    expect(await validateSchemas([rule])).toEqual([]);
    expect(checkPolicy(resources, { projectRoot: ROOT, complete: false })).toEqual([]);
    const [first, second, third] = rule.body.spec.groups[0].rules;
    first.fro = first.for;
    second.for = 5;
    delete third.labels;
    rule.body.spec.groups[0].rules.push({ ...first, expr: 'vector(1)' }, { expr: 'vector(1)' });

    const schemaErrors = (await validateSchemas([rule])).join('\n');
    expect(schemaErrors).toMatch(/PrometheusRule\/memorychat: \/spec\/groups\/0\/rules\/0: must not have additional properties \(fro\)/);
    expect(schemaErrors).toMatch(/\/spec\/groups\/0\/rules\/1\/for: must be string/);
    expect(checkPolicy(resources, { projectRoot: ROOT, complete: false })).toEqual([
      `k8s/monitoring/prometheus-rule.yaml#0: PrometheusRule/memorychat: alert ${third.alert} needs labels.severity (critical, warning, info)`,
      `k8s/monitoring/prometheus-rule.yaml#0: PrometheusRule/memorychat: alert ${first.alert} appears twice`,
      'k8s/monitoring/prometheus-rule.yaml#0: PrometheusRule/memorychat: a rule of group "memorychat-memory" must have either alert or record',
    ]);
  });

  it('when the monitoring variant is rendered, then the Grafana dashboard is a labelled ConfigMap of the JSON file, and a generator that would need a name hash is refused', async () => {
    const { resources, files } = renderKustomization(path.join(ROOT, 'k8s/monitoring'), ROOT);
    const dashboard = resources.find((r) => r.body.kind === 'ConfigMap' && r.body.metadata.name === 'memorychat-grafana-dashboard')!.body;
    expect(dashboard.metadata.labels).toEqual({ grafana_dashboard: '1' });
    expect(JSON.parse(dashboard.data['grafana-dashboard.json']).uid).toBe('memorychat');
    expect(files).toContain(path.join(ROOT, 'k8s/monitoring/grafana-dashboard.json'));
    const dir = await tempDir({
      'kustomization.yaml': 'configMapGenerator: [{ name: d, files: [d.json, missing.json] }]\n',
      'd.json': '{}',
    });
    try {
      expect(renderKustomization(dir, dir).errors).toEqual([
        'kustomization.yaml: configMapGenerator d needs options.disableNameSuffixHash: true (scripts/k8s/render.ts does not compute the name hash)',
        'kustomization.yaml: configMapGenerator d: file "missing.json" does not exist',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('when a kustomization names a missing file or a patch targets no resource, then rendering reports both', async () => {
    const dir = await tempDir({
      'kustomization.yaml': 'resources: [missing.yaml, cm.yaml]\npatches: [{ path: patch.yaml }]\n',
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: a }\n',
      'patch.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: b }\ndata: { PORT: "1" }\n',
    });
    try {
      const { errors } = renderKustomization(dir, dir);
      expect(errors).toEqual([
        'kustomization.yaml: resource "missing.yaml" does not exist',
        'patch.yaml: patches ConfigMap/b, which no resource of . defines',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('when a manifest under k8s/ is used by no kustomization, then the check reports the file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-k8s-'));
    try {
      await cp(path.join(ROOT, 'k8s'), path.join(dir, 'k8s'), { recursive: true });
      await writeFile(path.join(dir, 'k8s/base/forgotten.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }\n');
      const result = await checkK8s(path.join(dir, 'k8s'), ROOT);
      expect(result.errors.map((e) => e.replace(path.relative(ROOT, dir), '<tmp>'))).toEqual([
        '<tmp>/k8s/base/forgotten.yaml: no kustomization uses this file',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
