// The files the compiled code reads at run time next to itself (import.meta.url): the SQL migrations,
// the embedded database's child process and template (plain JavaScript) and the playground's page.
// esbuild (build.mjs) emits only the .ts sources, so they are copied to dist/. Plain JavaScript, run by build.mjs.
import { cpSync, rmSync } from 'node:fs';

const ASSETS = [
  'services/db/migrations',
  'services/db/embedded/pglite-process.mjs',
  'services/db/embedded/cluster-template.mjs',
  'services/api/playground',
];

for (const asset of ASSETS) {
  // Removed first, so that a migration deleted or renamed in the source does not live on in dist/.
  rmSync(`dist/${asset}`, { recursive: true, force: true });
  cpSync(asset, `dist/${asset}`, { recursive: true });
}
