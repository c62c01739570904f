// A small kustomize subset, enough to render k8s/ without the kustomize binary (not installed here):
// `resources` (files and directories), `configMapGenerator` from `files` (with
// `options.disableNameSuffixHash: true`: kustomize's name hash is not computed here), `namespace`,
// `labels` (without selectors), `images`, and `patches` given by `path` (strategic merge, simplified:
// maps merge, lists whose items all have a `name` merge by name, other lists are replaced, null deletes).
// Anything else in a kustomization.yaml is reported as unsupported rather than silently ignored.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface Resource {
  /** Where the object came from, for messages: `k8s/base/api-deployment.yaml#0`. */
  source: string;
  body: Record<string, any>;
}

export interface Rendered {
  resources: Resource[];
  errors: string[];
  /** Every file read (kustomizations, resources, patches), as absolute paths. */
  files: string[];
}

const SUPPORTED_KEYS = new Set(['apiVersion', 'kind', 'resources', 'configMapGenerator', 'namespace', 'labels', 'images', 'patches']);

export function readYamlDocuments(file: string, display: string): { docs: Record<string, any>[]; errors: string[] } {
  const docs: Record<string, any>[] = [];
  const errors: string[] = [];
  for (const [index, doc] of parseAllDocuments(readFileSync(file, 'utf8')).entries()) {
    if (doc.errors.length) errors.push(...doc.errors.map((e) => `${display}#${index}: ${e.message}`));
    const body = doc.toJS();
    if (body === null || body === undefined) continue;
    if (typeof body !== 'object' || Array.isArray(body)) errors.push(`${display}#${index}: not a mapping`);
    else docs.push(body);
  }
  return { docs, errors };
}

/** Renders the kustomization in `dir`; `root` only shortens the paths shown in messages. */
export function renderKustomization(dir: string, root: string): Rendered {
  const show = (p: string) => path.relative(root, p) || '.';
  const file = path.join(dir, 'kustomization.yaml');
  if (!existsSync(file)) return { resources: [], errors: [`${show(dir)}: no kustomization.yaml`], files: [] };
  const files = [file];
  const parsed = readYamlDocuments(file, show(file));
  const errors = [...parsed.errors];
  const k = parsed.docs[0] ?? {};
  for (const key of Object.keys(k)) {
    if (!SUPPORTED_KEYS.has(key)) errors.push(`${show(file)}: "${key}" is not supported by scripts/k8s/render.ts`);
  }

  const resources: Resource[] = [];
  for (const entry of (k.resources ?? []) as string[]) {
    const target = path.resolve(dir, entry);
    if (!existsSync(target)) {
      errors.push(`${show(file)}: resource "${entry}" does not exist`);
    } else if (statSync(target).isDirectory()) {
      const nested = renderKustomization(target, root);
      resources.push(...nested.resources);
      errors.push(...nested.errors);
      files.push(...nested.files);
    } else {
      const { docs, errors: docErrors } = readYamlDocuments(target, show(target));
      errors.push(...docErrors);
      files.push(target);
      resources.push(...docs.map((body, i) => ({ source: `${show(target)}#${i}`, body })));
    }
  }

  for (const generator of (k.configMapGenerator ?? []) as Array<Record<string, any>>) {
    const generated = generateConfigMap(generator, dir, show(file));
    errors.push(...generated.errors);
    files.push(...generated.files);
    if (generated.body) resources.push({ source: `${show(file)}#configMapGenerator/${generator.name}`, body: generated.body });
  }

  for (const patch of (k.patches ?? []) as Array<Record<string, unknown>>) {
    if (typeof patch.path !== 'string' || patch.patch !== undefined || patch.target !== undefined) {
      errors.push(`${show(file)}: only patches given by "path" (strategic merge) are supported`);
      continue;
    }
    const patchFile = path.resolve(dir, patch.path);
    if (!existsSync(patchFile)) {
      errors.push(`${show(file)}: patch "${patch.path}" does not exist`);
      continue;
    }
    const { docs, errors: docErrors } = readYamlDocuments(patchFile, show(patchFile));
    errors.push(...docErrors);
    files.push(patchFile);
    for (const body of docs) {
      const target = resources.find((r) => sameObject(r.body, body));
      if (!target) {
        errors.push(`${show(patchFile)}: patches ${body.kind}/${body.metadata?.name}, which no resource of ${show(dir)} defines`);
      } else {
        target.body = strategicMerge(target.body, body);
      }
    }
  }

  for (const image of (k.images ?? []) as Array<{ name: string; newName?: string; newTag?: string; digest?: string }>) {
    const containers = resources.flatMap((r) => podContainers(r.body)).filter((c) => imageName(c.image) === image.name);
    if (containers.length === 0) errors.push(`${show(file)}: image "${image.name}" is used by no container`);
    const suffix = image.digest ? `@${image.digest}` : image.newTag ? `:${image.newTag}` : '';
    for (const c of containers) c.image = `${image.newName ?? image.name}${suffix || imageSuffix(c.image)}`;
  }

  for (const entry of (k.labels ?? []) as Array<{ pairs?: Record<string, string>; includeSelectors?: boolean }>) {
    if (entry.includeSelectors) errors.push(`${show(file)}: labels with includeSelectors are not supported`);
    for (const r of resources) r.body.metadata = { ...r.body.metadata, labels: { ...r.body.metadata?.labels, ...entry.pairs } };
  }

  if (typeof k.namespace === 'string') {
    for (const r of resources) r.body.metadata = { ...r.body.metadata, namespace: k.namespace };
  }
  return { resources, errors, files };
}

/** A ConfigMap whose data are files, each under its base name or the key given as `key=path`. */
function generateConfigMap(
  generator: Record<string, any>,
  dir: string,
  at: string,
): { body?: Record<string, any>; errors: string[]; files: string[] } {
  const { name, files = [], options = {}, ...rest } = generator;
  const errors = Object.keys(rest).map((key) => `${at}: configMapGenerator "${key}" is not supported by scripts/k8s/render.ts`);
  if (typeof name !== 'string' || !name) errors.push(`${at}: a configMapGenerator needs a name`);
  if (options.disableNameSuffixHash !== true) {
    errors.push(
      `${at}: configMapGenerator ${name} needs options.disableNameSuffixHash: true (scripts/k8s/render.ts does not compute the name hash)`,
    );
  }
  const data: Record<string, string> = {};
  const read: string[] = [];
  for (const entry of files as string[]) {
    const [key, relative] = entry.includes('=') ? entry.split('=', 2) : [path.basename(entry), entry];
    const source = path.resolve(dir, relative!);
    if (!existsSync(source)) {
      errors.push(`${at}: configMapGenerator ${name}: file "${relative}" does not exist`);
      continue;
    }
    data[key!] = readFileSync(source, 'utf8');
    read.push(source);
  }
  if (errors.length) return { errors, files: read };
  const metadata = {
    name,
    ...(options.labels ? { labels: options.labels } : {}),
    ...(options.annotations ? { annotations: options.annotations } : {}),
  };
  return { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata, data }, errors, files: read };
}

/** Kustomize matches a patch to a resource by group, kind and name. */
function sameObject(a: Record<string, any>, b: Record<string, any>): boolean {
  const group = (apiVersion: unknown) =>
    String(apiVersion ?? '')
      .split('/')
      .slice(0, -1)
      .join('/');
  return group(a.apiVersion) === group(b.apiVersion) && a.kind === b.kind && a.metadata?.name === b.metadata?.name;
}

export function strategicMerge(base: any, patch: any): any {
  if (patch === null) return undefined;
  if (Array.isArray(base) && Array.isArray(patch) && [...base, ...patch].every((item) => typeof item?.name === 'string')) {
    const merged = base.map((item) => {
      const match = patch.find((p) => p.name === item.name);
      return match ? strategicMerge(item, match) : item;
    });
    return [...merged, ...patch.filter((p) => !base.some((item) => item.name === p.name))];
  }
  if (isMap(base) && isMap(patch)) {
    const out: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(patch)) {
      const merged = strategicMerge(base[key], value);
      if (merged === undefined) delete out[key];
      else out[key] = merged;
    }
    return out;
  }
  return patch;
}

function isMap(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The containers (init containers included) of a Deployment, Job or Pod-like object. */
export function podContainers(body: Record<string, any>): Array<Record<string, any>> {
  const pod = body.kind === 'Pod' ? body.spec : body.spec?.template?.spec;
  return [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])];
}

function imageName(image: string): string {
  return image.replace(/@.*$/, '').replace(/:[^/:]+$/, '');
}

function imageSuffix(image: string): string {
  return image.slice(imageName(image).length);
}
