// No Docker engine runs here, so the image cannot be built in tests: these checks keep the
// Dockerfile consistent with the repository and with what k8s/ runs inside the image.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SOURCE_DIRS, SOURCE_FILES } from '../../scripts/build/entries.mjs';
import { podContainers, renderKustomization } from '../../scripts/k8s/render.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const lines = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')
  .replace(/\\\n/g, ' ')
  .split('\n')
  .filter((l) => l.trim() && !l.trim().startsWith('#'));
const finalStage = lines.slice(lines.reduce((last, l, i) => (/^FROM /i.test(l) ? i : last), 0));
const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'));

/** The lines of the stage named `name` (`FROM … AS name`), up to the next FROM. */
function stage(name: string): string[] {
  const from = lines.findIndex((l) => new RegExp(`^FROM .* AS ${name}$`, 'i').test(l.trim()));
  expect(from, `stage ${name}`).toBeGreaterThanOrEqual(0);
  const next = lines.findIndex((l, i) => i > from && /^FROM /i.test(l));
  return lines.slice(from, next < 0 ? undefined : next);
}

/** The sources of the COPY instructions that read the build context (not another stage). */
function contextCopies(of: string[] = lines): string[] {
  return of
    .filter((l) => /^COPY /i.test(l) && !/--from=/.test(l))
    .flatMap((l) =>
      l
        .trim()
        .split(/\s+/)
        .slice(1, -1)
        .filter((a) => !a.startsWith('--')),
    );
}

/** `dist/x/y.js` (what the image runs) → `x/y.ts` (what scripts/build/build.mjs compiles it from). */
function sourceOf(compiled: string): string {
  expect(compiled).toMatch(/^dist\/.+\.js$/);
  return compiled.replace(/^dist\//, '').replace(/\.js$/, '.ts');
}

const isIgnored = (file: string) => ignored.some((pattern) => file === pattern || file.startsWith(`${pattern}/`));
const isCopied = (file: string, of: string[] = lines) =>
  contextCopies(of).some((src) => file === src || file.startsWith(`${src.replace(/\/$/, '')}/`));

describe('the Dockerfile', () => {
  it('when the image starts, then node itself is PID 1 and runs compiled JavaScript built from an entry point that exists', () => {
    const cmd = JSON.parse(finalStage.find((l) => /^CMD /i.test(l))!.slice(4)) as string[];
    expect(cmd[0]).toBe('node');
    expect(cmd).toHaveLength(2);
    expect(existsSync(path.join(ROOT, sourceOf(cmd[1]!)))).toBe(true);
  });

  it('when the image runs, then its node_modules hold production dependencies only, without tsx, esbuild or TypeScript', () => {
    const modulesFrom = /^COPY --from=(\S+) \S*node_modules/i.exec(
      finalStage.find((l) => /node_modules/.test(l) && /^COPY /i.test(l))!,
    )![1];
    expect(stage(modulesFrom!).find((l) => /^RUN /i.test(l))).toMatch(/npm ci --omit=dev/);
    const { dependencies } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const tool of ['tsx', 'esbuild', 'typescript']) expect(Object.keys(dependencies)).not.toContain(tool);
  });

  it('when the image runs, then it runs as a numeric non-root user', () => {
    const user = finalStage
      .filter((l) => /^USER /i.test(l))
      .at(-1)
      ?.slice(5)
      .trim();
    expect(user).toMatch(/^[1-9]\d*(:\d+)?$/);
  });

  it('when the build context is sent, then every file the Dockerfile copies exists and is not excluded', () => {
    const sources = contextCopies();
    expect(sources).toContain('package-lock.json');
    for (const source of sources) {
      expect(existsSync(path.join(ROOT, source)), source).toBe(true);
      expect(isIgnored(source), `${source} is in .dockerignore`).toBe(false);
    }
  });

  it('when k8s/ runs a command in the image, then it runs the compiled file, and its source is copied into the build stage', () => {
    const { resources } = renderKustomization(path.join(ROOT, 'k8s/overlays/example'), ROOT);
    const entries = resources.flatMap((r) => podContainers(r.body)).map((c) => c.command as string[]);
    for (const command of entries) expect(command.slice(0, -1)).toEqual(['node']);
    const sources = entries.map((c) => sourceOf(c.at(-1)!));
    expect(sources).toEqual(expect.arrayContaining(['services/api/server.ts', 'services/worker/worker.ts', 'scripts/migrate.ts']));
    for (const source of sources) expect(isCopied(source), source).toBe(true);
    expect(finalStage.some((l) => /^COPY --from=build \/app\/dist /i.test(l))).toBe(true);
  });

  it('when the build stage runs npm run build:service, then every source it compiles is copied into that stage', () => {
    const build = stage('build');
    expect(build.some((l) => /^RUN npm run build:service/i.test(l))).toBe(true);
    for (const source of [...SOURCE_DIRS, ...SOURCE_FILES]) expect(isCopied(source, build), source).toBe(true);
  });

  it('when the image starts for the first time, then its node_modules already hold the embedded database template that postinstall makes', () => {
    const deps = stage('deps');
    const run = deps.findIndex((l) => /^RUN node scripts\/build\/embedded-cluster-template\.mjs$/i.test(l.trim()));
    expect(run).toBeGreaterThan(deps.findIndex((l) => /npm ci --omit=dev/.test(l)));
    // What that script reads from the repository: itself, the template module, the database child it
    // forks and the migrations it applies (cluster-template.mjs finds them by import.meta.url).
    const read = [
      'scripts/build/embedded-cluster-template.mjs',
      'services/db/embedded/cluster-template.mjs',
      'services/db/embedded/pglite-process.mjs',
      'services/db/migrations/001_sessions_and_turns.sql',
    ];
    for (const file of read) expect(isCopied(file, deps.slice(0, run)), file).toBe(true);
  });
});
