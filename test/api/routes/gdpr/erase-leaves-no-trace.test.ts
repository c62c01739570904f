import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { analyzeGrownTables } from '../../../../services/db/embedded/table-statistics.js';
import { freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

/** Postgres's page size, and where a page header keeps the bounds of the page's free space. */
const PAGE = 8192;
const PD_LOWER = 12;
const PD_UPPER = 14;

/**
 * Where in `file` each occurrence of `needle` is: in a page's free space (between the end of its line
 * pointers and the start of its tuples, where no query, index or statistic reaches) or elsewhere.
 */
async function occurrences(file: string, needle: string): Promise<{ inFreeSpace: number; elsewhere: number }> {
  const bytes = await readFile(file);
  const found = { inFreeSpace: 0, elsewhere: 0 };
  for (let at = bytes.indexOf(needle); at !== -1; at = bytes.indexOf(needle, at + 1)) {
    const page = at - (at % PAGE);
    const lower = bytes.readUInt16LE(page + PD_LOWER);
    const upper = bytes.readUInt16LE(page + PD_UPPER);
    const inFreeSpace = at - page >= lower && at - page + needle.length <= upper;
    found[inFreeSpace ? 'inFreeSpace' : 'elsewhere'] += 1;
  }
  return found;
}

/** Files under `dir` whose bytes contain `needle`, relative to `dir`. */
async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if ((await readFile(file)).includes(needle)) hits.push(path.relative(dir, file));
  }
  return hits;
}

/**
 * An erased user's text must leave the embedded database's files, not just its query results: deleted
 * rows stay in heap pages and in the WAL until their space is reclaimed and the WAL is retired. With
 * ERASE_RECLAIM=rewrite no file keeps it; with the default plain VACUUM, which stalls no other tenant,
 * only the free space of the table pages that held it may, until a later write there (docs/gdpr-storage.md).
 */
describe('erasing a user on the embedded database', () => {
  let t: TestApp | undefined;
  let testDatabase: TestDatabase | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await testDatabase?.remove();
    testDatabase = undefined;
  });

  /** A user with a canary string in turns, an export and a stored idempotent response, erased; the service stopped. */
  async function eraseCanaryUser(env: Record<string, string>): Promise<{ dataDir: string; canary: string }> {
    testDatabase = await freshTestDatabase();
    t = await startTestApp(env, { testDatabase, keepTestDatabase: true });
    const dataDir = testDatabase.env.DATA_DIR;
    const canary = `canary-${randomUUID()}`;
    const subject = t.token('erasee');
    const bystander = t.token('bystander');
    // Interleaved with a bystander's turns, so the erased rows share pages with rows that stay.
    for (let i = 0; i < 20; i++) {
      const mine = await t.request('POST', '/sessions/turns', {
        token: subject,
        headers: { 'idempotency-key': `erasee-${i}` },
        body: {
          question: `Revenue of ${canary} in quarter ${i}?`,
          answer: `${canary} made ${i}M`,
          sql_query: `SELECT '${canary}'`,
          context: { client: canary },
        },
      });
      expect(mine.status).toBe(201);
      const theirs = await t.request('POST', '/sessions/turns', {
        token: bystander,
        body: { question: `Bystander question ${i}`, answer: 'kept' },
      });
      expect(theirs.status).toBe(201);
    }
    const finished = (token: string, id: string) => gdprRequestFinished(t!, id, { token });
    const exported = await t.request('POST', '/me/export', { token: subject });
    expect((await finished(subject, exported.body.request_id)).status).toBe('completed');

    // The embedded database's statistics pass (every 30 s in a running service) samples column values
    // into pg_statistic: the canary is there too until the erase.
    expect(await analyzeGrownTables(t.database.pool)).toContain('turns');
    const { rows: sampled } = await t.database.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stats WHERE tablename = 'turns' AND concat(most_common_vals, histogram_bounds) LIKE $1`,
      [`%${canary}%`],
    );
    expect(sampled[0]!.n).toBeGreaterThan(0);

    const erase = await t.request('DELETE', '/me', { token: subject });
    expect(erase.status).toBe(202);
    expect((await finished(subject, erase.body.request_id)).status).toBe('completed');
    const kept = await t.request('GET', '/sessions', { token: bystander });
    expect(kept.body.sessions).toHaveLength(20);

    await t.close();
    t = undefined;
    expect(await filesContaining(dataDir, 'Bystander question 7')).not.toEqual([]);
    return { dataDir, canary };
  }

  it('when a user with a canary string in turns, an export and a stored idempotent response is erased with ERASE_RECLAIM=rewrite and the service stops, then no file under DATA_DIR holds the canary', async () => {
    const { dataDir, canary } = await eraseCanaryUser({ ERASE_RECLAIM: 'rewrite' });
    expect(await filesContaining(dataDir, canary)).toEqual([]);
  });

  it('when the same user is erased with the default reclaim (a plain VACUUM) and the service stops, then the canary is in no row, index entry, statistic or WAL segment under DATA_DIR, only in the free space of the table pages that held it', async () => {
    const { dataDir, canary } = await eraseCanaryUser({});
    const files = await filesContaining(dataDir, canary);
    for (const file of files) {
      expect(file).toMatch(/^pg\/base\//);
      expect({ file, ...(await occurrences(path.join(dataDir, file), canary)) }).toMatchObject({ file, elsewhere: 0 });
    }
  });
});
