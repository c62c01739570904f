// A new embedded database's cluster: copied from a migrated template created once per install
// (postinstall, scripts/build/embedded-cluster-template.mjs), or created by initdb when there is none
// that fits. PGlite's initdb and then the migrations were most of a first `npm start` (at a load average
// of 16-19 on 2 cores: 19-20 s and 9-11 s of 49-54 s); copying the template's ~40 MB takes a fraction
// of a second, and the service's migrate() then applies only what the template lacks.
// Plain JavaScript, because the install step runs it before anything is built.
import { fork } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadMigrationFiles, migrate } from 'postgres-migrations';

const CHILD = fileURLToPath(new URL('./pglite-process.mjs', import.meta.url));
const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));
const TEMPLATE_PREFIX = 'embedded-cluster-';
const require = createRequire(import.meta.url);

/**
 * Where the installed PGlite's template lives:
 * `node_modules/.cache/memorychat/embedded-cluster-pglite-<version>-pgvector-<version>/`, holding the
 * cluster (`pg/`) and the migrations applied to it (`migrations.json`). The name carries the versions
 * because a cluster is only valid for the Postgres that created it, and holds pgvector's catalog entries.
 */
export async function clusterTemplateDir() {
  const version = async (name) => JSON.parse(await readFile(packageJson(name), 'utf8')).version;
  const key = `pglite-${await version('@electric-sql/pglite')}-pgvector-${await version('@electric-sql/pglite-pgvector')}`;
  // …/node_modules/@electric-sql/pglite/package.json
  const nodeModules = path.resolve(path.dirname(packageJson('@electric-sql/pglite')), '..', '..');
  return path.join(nodeModules, '.cache', 'memorychat', `${TEMPLATE_PREFIX}${key}`);
}

/** The package's package.json, found from its entry point (its exports do not list package.json). */
function packageJson(name) {
  // …/node_modules/<name>/dist/index.cjs
  return path.resolve(path.dirname(require.resolve(name)), '..', 'package.json');
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
  const code = await exitOf(child);
  if (code !== 0) throw new Error(`embedded Postgres failed to create its data directory (code ${code})`);
}

/**
 * Fills the empty directory `pgDir` with a copy of the template. False, and `pgDir` left alone, when
 * there is no template for the installed PGlite, when one of the template's migrations is no longer
 * the file in services/db/migrations (edited on a branch: migrate() would refuse the copy), or when
 * `pgDir` holds files: the caller runs initdb instead.
 */
export async function copyClusterTemplate(pgDir, template) {
  template ??= await clusterTemplateDir();
  if (!(await isCurrent(template)) || (await readdir(pgDir)).length > 0) return false;
  // Copied beside it and renamed, so that a copy cut short never looks like a cluster (PG_VERSION) later.
  const partial = `${pgDir}.partial`;
  await rm(partial, { recursive: true, force: true });
  await cp(path.join(template, 'pg'), partial, { recursive: true });
  await rmdir(pgDir);
  await rename(partial, pgDir);
  return true;
}

/**
 * Whether `template` holds a cluster whose applied migrations are all still the files in
 * services/db/migrations (newer files are applied by migrate() after the copy).
 */
async function isCurrent(template) {
  if (!(await isCluster(path.join(template, 'pg')))) return false;
  const applied = JSON.parse(await readFile(path.join(template, 'migrations.json'), 'utf8'));
  const shipped = new Map((await loadMigrationFiles(MIGRATIONS_DIR)).map((m) => [m.fileName, m.hash]));
  return applied.every((m) => shipped.get(m.fileName) === m.hash);
}

/**
 * Creates the template for the installed PGlite and the migrations in services/db/migrations unless
 * a current one exists (one holding an edited migration is made again), and removes other versions' templates. Returns its directory.
 */
export async function createClusterTemplate() {
  const template = await clusterTemplateDir();
  const parent = path.dirname(template);
  const current = path.basename(template);
  if (!(await isCurrent(template))) {
    await rm(template, { recursive: true, force: true });
    await mkdir(parent, { recursive: true });
    const partial = path.join(parent, `${current}.${process.pid}.partial`);
    await rm(partial, { recursive: true, force: true });
    try {
      await mkdir(partial);
      await initialiseCluster(path.join(partial, 'pg'));
      const applied = await migrateCluster(path.join(partial, 'pg'));
      await writeFile(path.join(partial, 'migrations.json'), `${JSON.stringify(applied, null, 2)}\n`);
      // Another install may have finished first: its template is as good.
      await rename(partial, template).catch(async (err) => {
        if (!(await isCluster(path.join(template, 'pg')))) throw err;
      });
    } finally {
      await rm(partial, { recursive: true, force: true });
    }
  }
  for (const entry of await readdir(parent)) {
    if (entry.startsWith(TEMPLATE_PREFIX) && entry !== current && !entry.startsWith(`${current}.`)) {
      await rm(path.join(parent, entry), { recursive: true, force: true });
    }
  }
  return template;
}

/**
 * Applies services/db/migrations to the cluster in `pgDir` as the service would (postgres-migrations
 * over the child's socket; a new cluster has no older ledger to adopt, db/migrate.ts), and returns the
 * applied files' names and hashes.
 */
async function migrateCluster(pgDir) {
  const socketDir = await mkdtemp(path.join(tmpdir(), 'memorychat-pg-'));
  const child = fork(CHILD, [], {
    env: {
      ...process.env,
      MEMORYCHAT_PGLITE_DATA_DIR: pgDir,
      MEMORYCHAT_PGLITE_VECTOR: 'on',
      MEMORYCHAT_PGLITE_SOCKET: path.join(socketDir, '.s.PGSQL.5432'),
    },
    execArgv: ['--liftoff-only'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = exitOf(child);
  let applied;
  try {
    await new Promise((resolve, reject) => {
      child.once('message', (msg) =>
        msg.type === 'ready' ? resolve() : reject(new Error(`embedded Postgres failed to start: ${msg.message}`)),
      );
      exited.then((code) => reject(new Error(`embedded Postgres exited during start (code ${code})`)));
    });
    const client = new pg.Client({ host: socketDir, port: 5432, user: 'postgres', database: 'postgres' });
    await client.connect();
    try {
      applied = await migrate({ client }, MIGRATIONS_DIR);
    } finally {
      await client.end();
    }
  } finally {
    if (child.connected) child.send({ type: 'stop' });
    await exited;
    await rm(socketDir, { recursive: true, force: true });
  }
  // Stopped cleanly: the template is copied as a cluster that was shut down, with nothing to recover.
  if (child.exitCode !== 0) throw new Error(`embedded Postgres did not stop cleanly (code ${child.exitCode})`);
  return applied.filter((m) => m.id > 0).map((m) => ({ fileName: m.fileName, hash: m.hash }));
}

function exitOf(child) {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => resolve(code));
  });
}

async function isCluster(dir) {
  return stat(path.join(dir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
}
