// A new embedded database's cluster: copied from a template created once per install (postinstall,
// scripts/build/embedded-cluster-template.mjs), or created by initdb when there is none. PGlite's initdb
// was the largest part of a first `npm start` (7 of its 13.5 s at a load average of 8 on 2 cores);
// copying the template's ~40 MB takes a fraction of a second.
// Plain JavaScript, because the install step runs it before anything is built.
import { fork } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rename, rm, rmdir, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./pglite-process.mjs', import.meta.url));
const TEMPLATE_PREFIX = 'embedded-cluster-pglite-';

/**
 * Where the installed PGlite's template lives: `node_modules/.cache/memorychat/embedded-cluster-pglite-<version>`.
 * The name carries PGlite's version because a cluster is only valid for the Postgres that created it.
 */
export async function clusterTemplateDir() {
  // …/node_modules/@electric-sql/pglite/dist/index.cjs
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const packageDir = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(await readFile(path.join(packageDir, 'package.json'), 'utf8'));
  return path.join(packageDir, '..', '..', '.cache', 'memorychat', `${TEMPLATE_PREFIX}${version}`);
}

/** Creates `pgDir`'s cluster (initdb), in a child process of its own that then exits. */
export async function initialiseCluster(pgDir) {
  // Its own process: initdb grows PGlite's WebAssembly memory to about 740 MB, which a process never gives
  // back, and the process that serves the database would otherwise idle at that size.
  const child = fork(CHILD, [], {
    env: { ...process.env, MEMORYCHAT_PGLITE_DATA_DIR: pgDir, MEMORYCHAT_PGLITE_VECTOR: 'on', MEMORYCHAT_PGLITE_INIT_ONLY: 'on' },
    // WebAssembly compiled by the baseline compiler only: for a process this short, optimising its hot
    // functions cost more than it saved (initdb 2.4-2.6 s of CPU against 4.0-4.4 s, 7-10 s wall against 12-17 s).
    execArgv: ['--liftoff-only'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const code = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (exitCode) => resolve(exitCode));
  });
  if (code !== 0) throw new Error(`embedded Postgres failed to create its data directory (code ${code})`);
}

/**
 * Fills the empty directory `pgDir` with a copy of the template. False when there is no template for
 * the installed PGlite, or `pgDir` holds files (left alone): the caller runs initdb instead.
 */
export async function copyClusterTemplate(pgDir) {
  const template = await clusterTemplateDir();
  if (!(await isCluster(template)) || (await readdir(pgDir)).length > 0) return false;
  // Copied beside it and renamed, so that a copy cut short never looks like a cluster (PG_VERSION) later.
  const partial = `${pgDir}.partial`;
  await rm(partial, { recursive: true, force: true });
  await cp(template, partial, { recursive: true });
  await rmdir(pgDir);
  await rename(partial, pgDir);
  return true;
}

/**
 * Creates the installed PGlite's template unless it exists, and removes other versions' templates.
 * Returns its directory.
 */
export async function createClusterTemplate() {
  const template = await clusterTemplateDir();
  if (await isCluster(template)) return template;
  const parent = path.dirname(template);
  await mkdir(parent, { recursive: true });
  const partial = `${template}.${process.pid}.partial`;
  await rm(partial, { recursive: true, force: true });
  try {
    await initialiseCluster(partial);
    // Another install may have finished first: its template is as good.
    await rename(partial, template).catch(async (err) => {
      if (!(await isCluster(template))) throw err;
    });
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  const current = path.basename(template);
  for (const entry of await readdir(parent)) {
    if (entry.startsWith(TEMPLATE_PREFIX) && entry !== current && !entry.startsWith(`${current}.`)) {
      await rm(path.join(parent, entry), { recursive: true, force: true });
    }
  }
  return template;
}

async function isCluster(dir) {
  return stat(path.join(dir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
}
