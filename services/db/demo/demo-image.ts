import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clusterTemplateDir } from '../embedded/cluster-template.mjs';
import type { PgliteProcess } from '../embedded/embedded-postgres.js';
import { DEMO_CONTENT_HASH } from './demo-dataset.js';

/**
 * A loaded demo engine's data directory as a tarball, which the next engine starts from instead of
 * initdb and the load: an engine's start 0.8 s against 2.6 s on a quiet 2-core machine (initdb 1.8 s
 * of it), and a restart is what ends a runaway statement, which the questions queued behind it wait for.
 * Kept beside the embedded cluster template (node_modules/.cache/memorychat), named by PGlite's
 * version and by the dataset's content, so the engines of later starts use it too; where that is not
 * writable, in a directory of this engine's own, removed when it closes.
 */
export interface DemoImage {
  /** The tarball a fresh engine starts from, when there is one. */
  file(): Promise<string | undefined>;
  /** Keeps a freshly loaded engine's data directory as the image. */
  keep(engine: PgliteProcess): Promise<void>;
  /** An image an engine failed to start from: not used again. */
  discard(file: string): Promise<void>;
  close(): Promise<void>;
}

export function demoImage(sharedFile?: string): DemoImage {
  const shared = sharedFile
    ? Promise.resolve(sharedFile)
    : clusterTemplateDir().then(
        (template) => `${template}.demo-${DEMO_CONTENT_HASH}.tar`,
        () => undefined,
      );
  let current: string | undefined;
  let ownDir: string | undefined;
  return {
    async file() {
      if (current) return current;
      const file = await shared;
      if (file && (await exists(file))) current = file;
      return current;
    },
    async keep(engine) {
      const file = await shared;
      if (file) {
        try {
          await engine.dumpTo(file);
          current = file;
          return;
        } catch {
          // Not writable (a read-only install): this engine's own directory instead.
        }
      }
      ownDir ??= await mkdtemp(path.join(tmpdir(), 'memorychat-demo-'));
      const own = path.join(ownDir, 'demo.tar');
      await engine.dumpTo(own);
      current = own;
    },
    async discard(file) {
      if (current === file) current = undefined;
      await rm(file, { force: true });
    },
    async close() {
      if (ownDir) await rm(ownDir, { recursive: true, force: true });
    },
  };
}

function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}
