import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { analyzeGrownTables } from '../../../services/db/embedded/table-statistics.js';
import { waitFor } from '../../support/databases/redis.js';
import { freshTestDatabase, type TestDatabase } from '../../support/databases/test-database.js';
import { startTestApp, type TestApp } from '../../support/service/test-app.js';

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
 * rows stay in heap pages and in the WAL until their space is reclaimed and the WAL is retired.
 */
describe('erasing a user on the embedded database', () => {
  let t: TestApp | undefined;
  let testDatabase: TestDatabase | undefined;
  afterAll(async () => {
    await t?.close();
    await testDatabase?.remove();
  });

  it('when a user with a canary string in turns, an export and a stored idempotent response is erased and the service stops, then no file under DATA_DIR holds the canary', async () => {
    testDatabase = await freshTestDatabase();
    t = await startTestApp({}, { testDatabase, keepTestDatabase: true });
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
    const finished = (token: string, id: string) =>
      waitFor(
        async () => {
          const res = await t!.request('GET', `/gdpr/requests/${id}`, { token });
          return ['completed', 'failed'].includes(res.body?.status) && res.body;
        },
        30_000,
        `gdpr request ${id}`,
      );
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
    expect(await filesContaining(dataDir, canary)).toEqual([]);
  });
});
