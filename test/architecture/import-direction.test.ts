import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * The import rule (README "Where things are"): arrows run one way, top to bottom, and never in a circle.
 *
 *   api, worker        entry points: HTTP and the BullMQ worker; never import each other
 *   infra              what both entry points share: queues, Redis connection, logger options
 *   core               the memory logic: no HTTP, no BullMQ, no Redis
 *   db, providers      Postgres; embedders, answerers, LLMs: never import core (nor each other)
 *   config, model      the configuration and the domain types every layer shares
 *
 * Inside a layer the same holds room by room: a room is a folder of the layer (services/core/chat/)
 * or a file at the layer's root (services/core/deps.ts), and no room imports one that reaches back to
 * it. So core's front door (create-memory.ts) stands above its features, and its floor (deps.ts, the
 * job port, text and metrics helpers) below them (docs/repository-map.md).
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const LAYERS = ['model', 'config', 'db', 'providers', 'core', 'infra', 'api', 'worker'] as const;
type Layer = (typeof LAYERS)[number];

const ALLOWED: Record<Layer, Layer[]> = {
  model: ['model'],
  config: ['config', 'model'],
  db: ['db', 'config', 'model'],
  providers: ['providers', 'config', 'model'],
  core: ['core', 'db', 'providers', 'config', 'model'],
  infra: ['infra', 'core', 'db', 'providers', 'config', 'model'],
  api: ['api', 'infra', 'core', 'db', 'providers', 'config', 'model'],
  worker: ['worker', 'infra', 'core', 'db', 'providers', 'config', 'model'],
};

/** Packages that belong to the edges: core stays usable without an HTTP server or Redis. */
const FORBIDDEN_PACKAGES: Partial<Record<Layer, RegExp>> = {
  core: /^(fastify|@fastify\/|fastify-plugin|bullmq|ioredis)/,
  db: /^(fastify|@fastify\/|bullmq|ioredis)/,
  providers: /^(fastify|@fastify\/|bullmq|ioredis)/,
  model: /^(?!typebox)/,
};

function layerOf(file: string): Layer {
  const rel = path.relative(ROOT, file).split(path.sep);
  if (rel[0] === 'services' && LAYERS.includes(rel[1] as Layer)) return rel[1] as Layer;
  throw new Error(`${path.relative(ROOT, file)} is in no layer: add its folder to the rule`);
}

/** Every module specifier of a file: static imports and re-exports (type-only ones too), and import(). */
function importsOf(source: string): string[] {
  const found: string[] = [];
  const patterns = [/^\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const pattern of patterns) for (const m of source.matchAll(pattern)) found.push(m[1]!);
  return found;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return tsFiles(full);
    return full.endsWith('.ts') ? [full] : [];
  });
}

interface Violation {
  from: string;
  to: string;
  why: string;
}

/** Upward or sideways imports, and imports of packages a layer must not use. */
function directionViolations(files: string[], read: (file: string) => string): { violations: Violation[]; graph: Map<string, string[]> } {
  const violations: Violation[] = [];
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const from = layerOf(file);
    const edges: string[] = [];
    for (const spec of importsOf(read(file))) {
      if (!spec.startsWith('.')) {
        const pkg = FORBIDDEN_PACKAGES[from];
        if (pkg && !spec.startsWith('node:') && pkg.test(spec))
          violations.push({ from: rel(file), to: spec, why: `${from} must not import the package ${spec}` });
        continue;
      }
      const target = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
      edges.push(target);
      const to = layerOf(target);
      if (!ALLOWED[from].includes(to)) violations.push({ from: rel(file), to: rel(target), why: `${from} must not import ${to}` });
    }
    graph.set(file, edges);
  }
  return { violations, graph };
}

/** Each circle once, as the files along it. */
function cycles(graph: Map<string, string[]>, name: (node: string) => string = rel): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next].map(name));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

/** The room of a file: the folder of its layer it is in, or the file itself at the layer's root. */
function roomOf(file: string): string {
  const parts = rel(file).split(path.sep);
  return parts.length > 3 ? `${parts.slice(0, 3).join('/')}/` : parts.join('/');
}

/** The file graph folded into rooms: an arrow between two rooms for any import between their files. */
function roomGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const rooms = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = roomOf(file);
    const edges = rooms.get(from) ?? new Set<string>();
    for (const target of targets) if (roomOf(target) !== from) edges.add(roomOf(target));
    rooms.set(from, edges);
  }
  return new Map([...rooms].map(([room, edges]) => [room, [...edges].sort()]));
}

function rel(file: string): string {
  return path.relative(ROOT, file);
}

describe('import direction', () => {
  const files = tsFiles(path.join(ROOT, 'services'));
  const { violations, graph } = directionViolations(files, (file) => readFileSync(file, 'utf8'));

  it('when the source is read, then every file of services/ belongs to a layer', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(new Set(files.map(layerOf))).toEqual(new Set(LAYERS));
  });

  it('when any file imports, then the arrow points down the layers (api and worker never import each other)', () => {
    expect(violations).toEqual([]);
  });

  it('when the imports are followed, then no file reaches itself', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('when the imports are followed room by room (a folder of a layer, or a file at its root), then no room reaches itself', () => {
    expect(cycles(roomGraph(graph), (room) => room)).toEqual([]);
  });

  it('when core has its front door, its floor and its feature folders, then each is a room of its own', () => {
    const core = (file: string) => roomOf(path.join(ROOT, 'services/core', file));
    expect([core('create-memory.ts'), core('deps.ts'), core('chat/chat.ts'), core('chat/augment.ts')]).toEqual([
      'services/core/create-memory.ts',
      'services/core/deps.ts',
      'services/core/chat/',
      'services/core/chat/',
    ]);
  });

  it('when two folders of core import each other, or the floor imports a feature, then the room check finds the circle', () => {
    const planted = new Map<string, string>([
      [path.join(ROOT, 'services/core/chat/a.ts'), "import { b } from '../turns/b.js';"],
      [path.join(ROOT, 'services/core/turns/b.ts'), "import type { D } from '../deps.js';"],
      [path.join(ROOT, 'services/core/deps.ts'), "import type { A } from './chat/a.js';"],
    ]);
    const { violations, graph: plantedGraph } = directionViolations([...planted.keys()], (file) => planted.get(file)!);
    expect(violations).toEqual([]);
    expect(cycles(plantedGraph)).toEqual([
      ['services/core/chat/a.ts', 'services/core/turns/b.ts', 'services/core/deps.ts', 'services/core/chat/a.ts'],
    ]);
    planted.set(path.join(ROOT, 'services/core/deps.ts'), 'export interface D {}');
    planted.set(path.join(ROOT, 'services/core/turns/c.ts'), "import { a } from '../chat/a.js';");
    const folders = directionViolations([...planted.keys()], (file) => planted.get(file)!).graph;
    expect(cycles(folders)).toEqual([]);
    expect(cycles(roomGraph(folders), (room) => room)).toEqual([['services/core/chat/', 'services/core/turns/', 'services/core/chat/']]);
  });

  it('when an upward import or a circle is planted, then the check finds it', () => {
    const planted = new Map<string, string>([
      [path.join(ROOT, 'services/db/x.ts'), "import { AppError } from '../core/y.js';"],
      [path.join(ROOT, 'services/core/y.ts'), "import type { Z } from '../db/x.js';\nimport Fastify from 'fastify';"],
      [path.join(ROOT, 'services/api/a.ts'), "export { w } from '../worker/w.js';"],
      [path.join(ROOT, 'services/worker/w.ts'), 'export const w = 1;'],
    ]);
    const result = directionViolations([...planted.keys()], (file) => planted.get(file)!);
    expect(result.violations.map((v) => v.why).sort()).toEqual([
      'api must not import worker',
      'core must not import the package fastify',
      'db must not import core',
    ]);
    expect(cycles(result.graph)).toEqual([['services/core/y.ts', 'services/db/x.ts', 'services/core/y.ts']]);
  });
});
