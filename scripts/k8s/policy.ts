// The rules memorychat's manifests keep beyond the API schema (docs/design.md §10): hardened pods, probes
// on the real endpoints, selectors that select something, and configuration that the service's own
// config loader accepts in production.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigSchema, loadConfig } from '../../services/config/config.js';
import { podContainers, type Resource } from './render.js';

type Body = Record<string, any>;

const WORKLOAD_KINDS = new Set(['Deployment', 'Job']);

export interface PolicyOptions {
  projectRoot: string;
  /** An overlay is deployable as is: every ConfigMap and Secret it references must be in it. */
  complete: boolean;
}

export function checkPolicy(resources: Resource[], options: PolicyOptions): string[] {
  const errors: string[] = [];
  const workloads = resources.filter((r) => WORKLOAD_KINDS.has(r.body.kind));
  const environmentConfigMaps = new Set(
    workloads.flatMap((w) => podContainers(w.body)).flatMap((c) => (c.envFrom ?? []).map((from: Body) => from.configMapRef?.name)),
  );
  const find = (kind: string, name: string) => resources.find((r) => r.body.kind === kind && r.body.metadata?.name === name);

  for (const { source, body } of workloads) {
    const at = `${source}: ${body.kind}/${body.metadata?.name}`;
    const pod = body.spec?.template?.spec ?? {};
    if (pod.securityContext?.runAsNonRoot !== true || !(pod.securityContext?.runAsUser > 0)) {
      errors.push(`${at}: the pod needs securityContext.runAsNonRoot: true and a non-zero runAsUser`);
    }
    if (body.kind === 'Deployment' && !selects(body.spec?.selector, body.spec?.template?.metadata?.labels)) {
      errors.push(`${at}: spec.selector does not match the pod template's labels`);
    }
    for (const container of podContainers(body)) {
      errors.push(...checkContainer(container, pod, `${at} container ${container.name}`, options.projectRoot));
      errors.push(...checkEnvironment(container, find, `${at} container ${container.name}`, options.complete));
    }
  }

  for (const { source, body } of resources) {
    const at = `${source}: ${body.kind}/${body.metadata?.name}`;
    const selector =
      body.kind === 'Service'
        ? { matchLabels: body.spec?.selector }
        : body.kind === 'PodDisruptionBudget' || body.kind === 'PodMonitor'
          ? body.spec?.selector
          : body.kind === 'NetworkPolicy'
            ? body.spec?.podSelector
            : undefined;
    if (selector && !workloads.some((w) => selects(selector, w.body.spec?.template?.metadata?.labels))) {
      errors.push(`${at}: its selector matches no pod of the Deployments and Jobs here`);
    }
    if (body.kind === 'Service') {
      const portNames = workloads.flatMap((w) => podContainers(w.body)).flatMap((c) => (c.ports ?? []).map((p: Body) => p.name));
      for (const port of body.spec?.ports ?? []) {
        if (typeof port.targetPort === 'string' && !portNames.includes(port.targetPort))
          errors.push(`${at}: targetPort "${port.targetPort}" is no container port name`);
      }
    }
    if (body.kind === 'PodMonitor') errors.push(...checkPodMonitor(body, workloads, at));
    if (body.kind === 'PrometheusRule') errors.push(...checkAlertRules(body, at));
    if (body.kind === 'HorizontalPodAutoscaler') {
      const target = find(body.spec?.scaleTargetRef?.kind, body.spec?.scaleTargetRef?.name);
      if (!target) errors.push(`${at}: scaleTargetRef names no resource here`);
      else if (target.body.spec?.replicas !== undefined)
        errors.push(
          `${target.source}: ${target.body.kind}/${target.body.metadata.name} sets replicas, which would reset ${at}'s count on every apply`,
        );
    }
    // A ConfigMap that a container takes its environment from holds variables of the service's config
    // (others, such as the Grafana dashboard's, hold files).
    if (body.kind === 'ConfigMap' && environmentConfigMaps.has(body.metadata?.name)) {
      errors.push(...unknownVariables(Object.keys(body.data ?? {}), at));
    }
    if (body.kind === 'ConfigMap' && configMapBytes(body) > CONFIG_MAP_MAX_BYTES) {
      errors.push(`${at}: holds ${configMapBytes(body)} bytes, over the API server's 1 MiB for a ConfigMap`);
    }
  }
  return errors;
}

const CONFIG_MAP_MAX_BYTES = 1024 * 1024;

function configMapBytes(body: Body): number {
  return Object.entries({ ...body.data, ...body.binaryData }).reduce(
    (n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(String(v)),
    0,
  );
}

const SEVERITIES = ['critical', 'warning', 'info'];

/**
 * Every rule records or alerts, not both; alert names are unique, so a route or a silence means one
 * alert; each alert says how bad it is and what it means (docs/monitoring.md lists them). Whether the
 * expressions are valid PromQL over metrics the service exports is the tests' (test/k8s/monitoring.test.ts).
 */
function checkAlertRules(body: Body, at: string): string[] {
  const errors: string[] = [];
  const seen = new Set<string>();
  const groups = new Set<string>();
  for (const group of body.spec?.groups ?? []) {
    if (groups.has(group.name)) errors.push(`${at}: group "${group.name}" appears twice`);
    groups.add(group.name);
    for (const rule of group.rules ?? []) {
      const name = rule.alert ?? rule.record;
      if ((rule.alert === undefined) === (rule.record === undefined)) {
        errors.push(`${at}: a rule of group "${group.name}" must have either alert or record`);
        continue;
      }
      if (rule.record !== undefined) continue;
      if (seen.has(name)) errors.push(`${at}: alert ${name} appears twice`);
      seen.add(name);
      if (!SEVERITIES.includes(rule.labels?.severity)) errors.push(`${at}: alert ${name} needs labels.severity (${SEVERITIES.join(', ')})`);
      for (const key of ['summary', 'description']) {
        if (!rule.annotations?.[key]) errors.push(`${at}: alert ${name} needs annotations.${key}`);
      }
    }
  }
  return errors;
}

function checkContainer(c: Body, pod: Body, at: string, projectRoot: string): string[] {
  const errors: string[] = [];
  const sc = c.securityContext ?? {};
  if (sc.readOnlyRootFilesystem !== true || sc.allowPrivilegeEscalation !== false || !sc.capabilities?.drop?.includes('ALL')) {
    errors.push(`${at}: needs readOnlyRootFilesystem: true, allowPrivilegeEscalation: false and capabilities.drop: [ALL]`);
  }
  const r = c.resources ?? {};
  if (!r.requests?.cpu || !r.requests?.memory || !r.limits?.memory) errors.push(`${at}: needs cpu and memory requests and a memory limit`);
  // node as PID 1 receives SIGTERM itself; npm or a shell would not pass it on.
  if (c.command?.[0] !== 'node') errors.push(`${at}: command must start with node`);
  const entry = (c.command ?? []).find((arg: string) => /\.(ts|js|mjs)$/.test(arg));
  // The image runs dist/, which scripts/build/build.mjs compiles from the TypeScript of the same path.
  const source = entry?.replace(/^dist\/(.+)\.js$/, '$1.ts');
  if (source && !existsSync(path.join(projectRoot, source))) errors.push(`${at}: runs ${entry}, whose source ${source} does not exist`);

  const emptyDirs = new Set((pod.volumes ?? []).filter((v: Body) => v.emptyDir).map((v: Body) => v.name));
  const writable = (c.volumeMounts ?? []).filter((m: Body) => emptyDirs.has(m.name)).map((m: Body) => m.mountPath);
  const dataDir = (c.env ?? []).find((e: Body) => e.name === 'DATA_DIR')?.value;
  if (!writable.includes('/tmp')) errors.push(`${at}: needs an emptyDir at /tmp (the root filesystem is read-only)`);
  if (!writable.includes(dataDir)) errors.push(`${at}: DATA_DIR must be set to the mount path of an emptyDir`);

  if ((c.ports ?? []).length > 0) {
    if (c.livenessProbe?.httpGet?.path !== '/healthz') errors.push(`${at}: serves HTTP, so its livenessProbe must GET /healthz`);
    if (c.readinessProbe?.httpGet?.path !== '/readyz') errors.push(`${at}: serves HTTP, so its readinessProbe must GET /readyz`);
  }
  return errors;
}

/** Every pod the PodMonitor selects must serve each endpoint's port by name, at /metrics. */
function checkPodMonitor(body: Body, workloads: Resource[], at: string): string[] {
  const errors: string[] = [];
  const selected = workloads.filter(
    (w) => w.body.kind === 'Deployment' && selects(body.spec?.selector, w.body.spec?.template?.metadata?.labels),
  );
  for (const endpoint of body.spec?.podMetricsEndpoints ?? []) {
    if (endpoint.path !== '/metrics') errors.push(`${at}: podMetricsEndpoints must scrape /metrics, not ${endpoint.path}`);
    for (const w of selected) {
      const ports = podContainers(w.body).flatMap((c) => (c.ports ?? []).map((p: Body) => p.name));
      if (!ports.includes(endpoint.port))
        errors.push(`${at}: port "${endpoint.port}" is no container port name of Deployment/${w.body.metadata.name}`);
    }
  }
  return errors;
}

/** The container's environment as the kubelet would build it, checked by the service's own loader. */
function checkEnvironment(c: Body, find: (kind: string, name: string) => Resource | undefined, at: string, complete: boolean): string[] {
  const errors: string[] = [];
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const [kind, ref] = from.configMapRef ? ['ConfigMap', from.configMapRef] : ['Secret', from.secretRef];
    const found = ref && find(kind, ref.name);
    if (!found) {
      if (complete || kind === 'ConfigMap') errors.push(`${at}: envFrom names ${kind} "${ref?.name}", which is not here`);
      continue;
    }
    Object.assign(env, found.body.data && kind === 'Secret' ? decodeBase64(found.body.data) : found.body.data, found.body.stringData);
  }
  for (const e of c.env ?? []) if (typeof e.value === 'string') env[e.name] = e.value;
  errors.push(...unknownVariables(Object.keys(env), at));
  if (!complete) return errors;

  if (env.NODE_ENV !== 'production') errors.push(`${at}: NODE_ENV must be production`);
  // Without them the pod would start an embedded database in an emptyDir (lost on restart, one per
  // pod) and the worker would refuse to start.
  for (const name of ['DATABASE_URL', 'REDIS_URL']) if (!env[name]) errors.push(`${at}: ${name} must be set`);
  try {
    loadConfig(env);
  } catch (err) {
    errors.push(`${at}: the service would refuse this configuration: ${(err as Error).message}`);
  }
  return errors;
}

function unknownVariables(names: string[], at: string): string[] {
  const known = new Set(Object.keys(ConfigSchema.properties));
  return names.filter((n) => !known.has(n)).map((n) => `${at}: ${n} is not a variable of services/config/config.ts`);
}

function decodeBase64(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** Whether a label selector (matchLabels and `In` expressions) selects pods with these labels. */
function selects(selector: Body | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector || !labels) return false;
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every(
    (e: Body) => (e.operator === 'In' && e.values.includes(labels[e.key])) || (e.operator === 'Exists' && e.key in labels),
  );
  const empty = !selector.matchLabels && !selector.matchExpressions;
  return !empty && byLabels && byExpressions;
}
