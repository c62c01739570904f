// No Docker engine runs here, so the image cannot be built in tests: these checks keep the
// Dockerfile consistent with the repository and with what k8s/ runs inside the image.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
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

/** The sources of the COPY instructions that read the build context (not another stage). */
function contextCopies(): string[] {
  return lines
    .filter((l) => /^COPY /i.test(l) && !/--from=/.test(l))
    .flatMap((l) => l.trim().split(/\s+/).slice(1, -1).filter((a) => !a.startsWith('--')));
}

const isIgnored = (file: string) => ignored.some((pattern) => file === pattern || file.startsWith(`${pattern}/`));
const isCopied = (file: string) => contextCopies().some((src) => file === src || file.startsWith(`${src.replace(/\/$/, '')}/`));

describe('the Dockerfile', () => {
  it('when the image starts, then node itself is PID 1 and runs an entry point that exists', () => {
    const cmd = JSON.parse(finalStage.find((l) => /^CMD /i.test(l))!.slice(4)) as string[];
    expect(cmd[0]).toBe('node');
    expect(existsSync(path.join(ROOT, cmd.at(-1)!))).toBe(true);
  });

  it('when the image runs, then it runs as a numeric non-root user', () => {
    const user = finalStage.filter((l) => /^USER /i.test(l)).at(-1)?.slice(5).trim();
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

  it('when k8s/ runs a command in the image, then the file it runs is copied into the image', () => {
    const { resources } = renderKustomization(path.join(ROOT, 'k8s/overlays/example'), ROOT);
    const entries = resources.flatMap((r) => podContainers(r.body)).map((c) => (c.command as string[]).at(-1)!);
    expect(entries).toEqual(expect.arrayContaining(['services/api/server.ts', 'services/worker/worker.ts', 'scripts/migrate.ts']));
    for (const entry of entries) expect(isCopied(entry), entry).toBe(true);
  });
});
