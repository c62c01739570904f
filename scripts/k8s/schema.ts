// Validates objects against the Kubernetes API schemas shipped in the kubernetes-models package
// (generated from the Kubernetes OpenAPI spec; no network). Its JSON schemas allow unknown fields,
// the way the API server's non-strict mode does, so a misspelt or misplaced field would pass them:
// `checkUnknownFields` type-checks the same objects against the package's TypeScript interfaces,
// where an unknown property in an object literal is an error. Custom resources that kubernetes-models
// does not know (the Prometheus Operator's PodMonitor) are checked against schemas of our own.
import path from 'node:path';
import ts from 'typescript';
import { checkCustomResource, customResourceSchema } from './monitoring-schema.js';
import type { Resource } from './render.js';

interface Model {
  new (data: unknown): { validate(): void };
}

/** `kubernetes-models/apps/v1/Deployment` for apps/v1 Deployment, `kubernetes-models/v1/Service` for v1. */
function modelModule(body: Record<string, any>): string | undefined {
  const { apiVersion, kind } = body;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !/^[A-Za-z0-9./]+$/.test(apiVersion + kind)) return undefined;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

export async function validateSchemas(resources: Resource[]): Promise<string[]> {
  const errors: string[] = [];
  for (const { source, body } of resources) {
    const custom = customResourceSchema(body);
    if (custom) {
      errors.push(...checkCustomResource(custom, body).map((e) => `${source}: ${body.kind}/${body.metadata?.name}: ${e}`));
      continue;
    }
    const specifier = modelModule(body);
    const module = specifier ? ((await import(specifier).catch(() => undefined)) as Record<string, Model> | undefined) : undefined;
    const ModelClass = module?.[body.kind];
    if (!ModelClass) {
      errors.push(`${source}: no Kubernetes schema for ${body.apiVersion} ${body.kind}`);
      continue;
    }
    try {
      new ModelClass(body).validate();
    } catch (err) {
      errors.push(`${source}: ${body.kind}/${body.metadata?.name}: ${(err as Error).message}`);
    }
  }
  return errors;
}

export function checkUnknownFields(resources: Resource[], projectRoot: string): string[] {
  const checked = resources.filter((r) => !customResourceSchema(r.body) && modelModule(r.body));
  // The virtual file sits in the project so that `kubernetes-models` resolves from its node_modules.
  const fileName = path.join(projectRoot, '__k8s_manifests__.ts');
  const text = checked
    // TypeScript reports the first problem of each declaration, so each object gets its own.
    .map(({ body }, i) => `const r${i}: import(${JSON.stringify(modelModule(body))}).I${body.kind} = ${JSON.stringify(body, null, 1)};`)
    .join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
    // The objects are plain JSON: the smallest library keeps the compile (the slow part) short.
    lib: ['lib.es5.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) =>
    name === fileName ? ts.createSourceFile(name, text, version) : getSourceFile.call(host, name, version, ...rest);
  host.fileExists = (name) => name === fileName || fileExists.call(host, name);
  host.readFile = (name) => (name === fileName ? text : readFile.call(host, name));
  const program = ts.createProgram([fileName], options, host);
  const source = program.getSourceFile(fileName)!;

  return ts.getPreEmitDiagnostics(program, source).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n').at(-1)!.trim();
    const declaration = d.start === undefined ? 0 : text.slice(0, d.start).split('\nconst r').length - 1;
    const resource = checked[declaration];
    const field = d.start === undefined ? '' : ` (at ${text.slice(d.start, d.start + (d.length ?? 0))})`;
    return `${resource?.source ?? fileName}: ${resource?.body.kind}/${resource?.body.metadata?.name}: ${message}${field}`;
  });
}
