// `npm run k8s:check`: renders every kustomization under k8s/ (scripts/k8s/render.ts, since the
// kustomize binary is not at hand), validates each object against the Kubernetes API schemas and
// types (kubernetes-models, offline), and applies memorychat's own rules (scripts/k8s/policy.ts).
// Overlays (k8s/overlays/*) must be deployable as they are; the base may leave the Secret out.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkPolicy } from './k8s/policy.js';
import { type Resource, renderKustomization } from './k8s/render.js';
import { checkUnknownFields, validateSchemas } from './k8s/schema.js';

export interface K8sCheckResult {
  kustomizations: string[];
  resourceCount: number;
  errors: string[];
}

/** Checks the manifests under `k8sDir`; `projectRoot` is where container commands' files must exist. */
export async function checkK8s(k8sDir: string, projectRoot: string): Promise<K8sCheckResult> {
  const files = readdirSync(k8sDir, { recursive: true, encoding: 'utf8' }).map((f) => path.join(k8sDir, f));
  const kustomizations = files
    .filter((f) => path.basename(f) === 'kustomization.yaml')
    .map((f) => path.dirname(f))
    .sort();
  const errors: string[] = [];
  const read = new Set<string>();
  const all: Resource[] = [];
  if (kustomizations.length === 0) errors.push(`${k8sDir}: no kustomization.yaml`);

  for (const dir of kustomizations) {
    const rendered = renderKustomization(dir, projectRoot);
    for (const f of rendered.files) read.add(f);
    all.push(...rendered.resources);
    const complete = path.relative(k8sDir, dir).split(path.sep)[0] === 'overlays';
    errors.push(
      ...rendered.errors,
      ...(await validateSchemas(rendered.resources)),
      ...checkPolicy(rendered.resources, { projectRoot, complete }),
    );
  }
  // One TypeScript program for every object: building it is the slow part.
  errors.push(...checkUnknownFields(all, projectRoot));
  // A manifest (or a file a generator reads, like the Grafana dashboard) that no kustomization reads
  // would never be deployed, nor checked.
  for (const file of files.filter((f) => /\.(ya?ml|json)$/.test(f) && !read.has(f))) {
    errors.push(`${path.relative(projectRoot, file)}: no kustomization uses this file`);
  }
  // Base and overlay both carry the base's objects: report each problem once.
  return {
    kustomizations: kustomizations.map((d) => path.relative(projectRoot, d)),
    resourceCount: all.length,
    errors: [...new Set(errors)],
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const projectRoot = fileURLToPath(new URL('..', import.meta.url));
  const result = await checkK8s(path.join(projectRoot, 'k8s'), projectRoot);
  for (const error of result.errors) console.error(error);
  const summary = `${result.kustomizations.length} kustomizations (${result.kustomizations.join(', ')}), ${result.resourceCount} objects`;
  if (result.errors.length) {
    console.error(`k8s: ${result.errors.length} problem(s) in ${summary}`);
    process.exit(1);
  }
  console.log(`k8s: ${summary}: valid`);
}
