// A new embedded data directory copies the install's migrated template cluster
// (services/db/embedded/cluster-template.mjs) instead of running initdb and the migrations, unless the
// template's migrations are not the files shipped now or the directory already holds files.
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadMigrationFiles } from 'postgres-migrations';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyClusterTemplate } from '../../../services/db/embedded/cluster-template.mjs';
import { startPgliteProcess } from '../../../services/db/embedded/embedded-postgres.js';
import { migrate } from '../../../services/db/migrate.js';
import { freshDataDir } from '../../support/databases/test-database.js';

const MIGRATIONS = fileURLToPath(new URL('../../../services/db/migrations/', import.meta.url));

describe('a new embedded data directory from the template cluster', () => {
  let work: string;
  let template: string;
  let applied: { fileName: string; hash: string }[];

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'memorychat-cluster-template-'));
    // The migrated cluster of the suite's template data directory, laid out as the install step lays it out.
    const migrated = await freshDataDir();
    template = path.join(work, 'template');
    await mkdir(template);
    await cp(path.join(migrated, 'pg'), path.join(template, 'pg'), { recursive: true });
    await rm(migrated, { recursive: true, force: true });
    applied = (await loadMigrationFiles(MIGRATIONS)).filter((m) => m.id > 0).map((m) => ({ fileName: m.fileName, hash: m.hash }));
    await writeFile(path.join(template, 'migrations.json'), JSON.stringify(applied));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  async function emptyPgDir(name: string): Promise<string> {
    const pgDir = path.join(work, name, 'pg');
    await mkdir(pgDir, { recursive: true });
    return pgDir;
  }

  it('when the template has the shipped migrations, then the copy opens migrated and migrate applies nothing', async () => {
    const pgDir = await emptyPgDir('copied');
    expect(await copyClusterTemplate(pgDir, template)).toBe(true);
    const pglite = await startPgliteProcess({ dataDir: pgDir, vector: true });
    const pool = new pg.Pool({ ...pglite.connection, max: 1 });
    try {
      expect(await migrate(pool)).toEqual([]);
      const { rows } = await pool.query<{ count: string }>('SELECT count(*) FROM migrations WHERE id > 0');
      expect(Number(rows[0]!.count)).toBe(applied.length);
    } finally {
      await pool.end();
      await pglite.stop();
    }
    // Nothing of the copy was left beside it, and the template is as it was.
    expect(await readdir(path.dirname(pgDir))).toEqual(['pg']);
    expect(await readdir(template)).toEqual(['migrations.json', 'pg']);
  });

  it('when one of its migrations is no longer the shipped file, then the template is not used', async () => {
    const edited = path.join(work, 'edited-template');
    await mkdir(edited);
    await cp(path.join(template, 'pg'), path.join(edited, 'pg'), { recursive: true });
    const changed = applied.map((m, i) => (i === 0 ? { ...m, hash: '0'.repeat(40) } : m));
    await writeFile(path.join(edited, 'migrations.json'), JSON.stringify(changed));
    const pgDir = await emptyPgDir('edited');
    expect(await copyClusterTemplate(pgDir, edited)).toBe(false);
    expect(await readdir(pgDir)).toEqual([]);
  });

  it('when the directory holds files, then it is left alone', async () => {
    const pgDir = await emptyPgDir('occupied');
    await writeFile(path.join(pgDir, 'note.txt'), 'kept');
    expect(await copyClusterTemplate(pgDir, template)).toBe(false);
    expect(await readdir(pgDir)).toEqual(['note.txt']);
    expect(await readFile(path.join(pgDir, 'note.txt'), 'utf8')).toBe('kept');
  });

  it('when there is no template, then the caller is told to run initdb', async () => {
    const pgDir = await emptyPgDir('no-template');
    expect(await copyClusterTemplate(pgDir, path.join(work, 'missing'))).toBe(false);
    expect(await readdir(pgDir)).toEqual([]);
  });
});
