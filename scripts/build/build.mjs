// `npm run build:service` (the first half of `npm run build`): the service's TypeScript to dist/, one
// JavaScript file per source file, with esbuild (a fraction of a second, where tsc took 10 s on a quiet
// machine and 88 s on a busy one, so a first `npm start` no longer waits for a compiler). esbuild only strips types: `npm run typecheck` (tsc)
// is what checks them, in CI. The layout stays the sources', so `import.meta.url` finds the files read
// at run time next to the code (copy-assets.mjs).
// Plain JavaScript so that the build needs nothing but esbuild and node.
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { SOURCE_DIRS, SOURCE_FILES } from './entries.mjs';

function typescriptUnder(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

// Removed first, so that a source deleted or renamed does not live on in dist/.
for (const dir of [...SOURCE_DIRS, 'scripts']) rmSync(`dist/${dir}`, { recursive: true, force: true });

await build({
  entryPoints: [...SOURCE_DIRS.flatMap(typescriptUnder), ...SOURCE_FILES],
  outdir: 'dist',
  outbase: '.',
  bundle: false,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});

await import('./copy-assets.mjs');
