import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SUITES } from '../../scripts/bench/suites.js';

/**
 * Docs point at each other and code comments point at docs; a renamed heading or a moved file must
 * not leave a pointer to nothing. Checked: relative links in every Markdown file of the repository,
 * and `docs/NAME.md`, `docs/NAME.md#anchor` and `docs/NAME.md §N` in the sources.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const SKIP = new Set(['node_modules', 'dist', '.git', '.data', 'coverage']);

function filesUnder(dir: string, keep: (file: string) => boolean): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) found.push(...filesUnder(full, keep));
    else if (keep(full)) found.push(full);
  }
  return found;
}

/** GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const headingsCache = new Map<string, { anchors: Set<string>; numbers: Set<string> }>();
function headingsOf(file: string) {
  let found = headingsCache.get(file);
  if (!found) {
    const anchors = new Set<string>();
    const numbers = new Set<string>();
    const seen = new Map<string, number>();
    let fenced = false;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.startsWith('```')) fenced = !fenced;
      // An explicit HTML anchor, which GitHub keeps: <a id="memory-scope"></a>.
      for (const [, id] of line.matchAll(/<a (?:id|name)="([^"]+)"/g)) if (!fenced && id) anchors.add(id);
      const match = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
      if (!match) continue;
      const heading = match[1] ?? '';
      const base = slug(heading);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
      const numbered = /^(\d+(?:\.\d+)*)\.?\s/.exec(heading)?.[1];
      if (numbered) numbers.add(numbered);
    }
    found = { anchors, numbers };
    headingsCache.set(file, found);
  }
  return found;
}

function problemWith(target: string, anchor: string | undefined, section: string | undefined): string | undefined {
  if (!existsSync(target)) return 'no such file';
  if (!target.endsWith('.md') || statSync(target).isDirectory()) return undefined;
  const { anchors, numbers } = headingsOf(target);
  if (anchor && !anchors.has(anchor.toLowerCase())) return `no heading #${anchor}`;
  if (section && !numbers.has(section)) return `no section ${section}`;
  return undefined;
}

describe('links to docs', () => {
  it('when a Markdown file links to a file of the repository, then the file and its heading exist', () => {
    const broken: string[] = [];
    for (const file of filesUnder(ROOT, (f) => f.endsWith('.md'))) {
      const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, href = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(href)) continue;
        const [where, anchor] = href.split('#');
        const target = where ? path.resolve(path.dirname(file), decodeURI(where)) : file;
        const problem = problemWith(target, anchor, undefined);
        if (problem) broken.push(`${path.relative(ROOT, file)}: (${href}) ${problem}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('when a code comment names a doc, a heading or a section, then it exists', () => {
    const broken: string[] = [];
    const sources = ['services', 'scripts', 'test', 'packages/memorychat-client/src'].flatMap((dir) =>
      filesUnder(path.join(ROOT, dir), (f) => /\.(ts|mjs|js|sql|sh)$/.test(f) && !f.endsWith('.d.ts')),
    );
    for (const file of sources) {
      const text = readFileSync(file, 'utf8');
      for (const [, name = '', anchor, section] of text.matchAll(/\bdocs\/([a-z0-9-]+\.md)(?:#([A-Za-z0-9_-]+)| ?§ ?(\d+(?:\.\d+)*))?/g)) {
        const problem = problemWith(path.join(ROOT, 'docs', name), anchor, section);
        if (problem)
          broken.push(`${path.relative(ROOT, file)}: docs/${name}${anchor ? `#${anchor}` : ''}${section ? ` §${section}` : ''} ${problem}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('when a doc, a comment, a message or the test configuration names a file under test/, then it exists', () => {
    // Applied migrations are never edited (docs/development.md#migrations): a test they name may have moved since.
    const migrations = path.join(ROOT, 'services', 'db', 'migrations');
    const files = [
      ...filesUnder(ROOT, (f) => f.endsWith('.md')),
      ...['services', 'scripts', 'test', 'clients', 'examples', 'packages/memorychat-client/src'].flatMap((dir) =>
        filesUnder(path.join(ROOT, dir), (f) => /\.(ts|mjs|js|sql|sh|py)$/.test(f) && !f.endsWith('.d.ts') && !f.startsWith(migrations)),
      ),
      ...['vitest.config.ts', 'package.json', '.ci/run'].map((name) => path.join(ROOT, name)),
    ];
    const broken: string[] = [];
    for (const file of files) {
      for (const [, named = ''] of readFileSync(file, 'utf8').matchAll(/(?<![\w./-])(test\/[\w./-]+\.(?:ts|js|py))\b/g)) {
        if (!existsSync(path.join(ROOT, named))) broken.push(`${path.relative(ROOT, file)}: ${named}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('when a doc, a comment or CI names a script file, an npm script or a bench suite, then it exists', () => {
    // The examples and the client packages are workspaces of their own, with their own scripts.
    const files = [
      ...filesUnder(ROOT, (f) => f.endsWith('.md') && !/\/(examples|packages|clients)\//.test(f)),
      ...['services', 'scripts', 'test', 'k8s'].flatMap((dir) => filesUnder(path.join(ROOT, dir), (f) => /\.(ts|mjs|js|sh|yaml)$/.test(f))),
      ...['package.json', '.ci/run', 'Dockerfile'].map((name) => path.join(ROOT, name)),
    ];
    const scripts = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const where = path.relative(ROOT, file);
      for (const [, named = ''] of text.matchAll(/(?<![\w./-])(scripts\/[\w./-]+\.(?:ts|mjs|js|sh|sql))\b/g)) {
        if (!existsSync(path.join(ROOT, named))) broken.push(`${where}: ${named}`);
      }
      for (const [, name = ''] of text.matchAll(/\bnpm run (?:-s )?([a-z][\w:.-]*)/g)) {
        if (!(name in scripts)) broken.push(`${where}: npm run ${name}`);
      }
      for (const [, suite = ''] of text.matchAll(/\bnpm run bench -- ([a-z][\w-]*)/g)) {
        if (!(suite in SUITES)) broken.push(`${where}: npm run bench -- ${suite}`);
      }
    }
    expect(broken).toEqual([]);
    // Every suite's script is there to run.
    for (const suite of Object.values(SUITES)) expect(existsSync(path.join(ROOT, 'scripts/bench', suite.script)), suite.script).toBe(true);
  });
});
