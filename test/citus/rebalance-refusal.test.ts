import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebalanceCitus } from '../../services/db/citus-rebalance.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

/**
 * A shard move switches over at the source's WAL write position, so a worker that acknowledges commits
 * before writing their WAL (synchronous_commit off) could lose a write acknowledged just before it
 * (docs/scaling.md#rebalancing): npm run citus:rebalance refuses to start there. The rebalance test
 * runs it on workers that commit synchronously.
 */
describe('a rebalance on workers that commit asynchronously', () => {
  let t: TestApp;
  let database: string;

  beforeAll(async () => {
    t = await startTestApp();
    database = (await t.admin.query<{ name: string }>('SELECT current_database() AS name')).rows[0]!.name;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('when a worker has synchronous_commit off, then the rebalance refuses to start and leaves row-level security forced', async () => {
    await t.admin.query(`SELECT run_command_on_workers($$ALTER DATABASE ${database} SET synchronous_commit = off$$)`);
    try {
      await expect(rebalanceCitus(t.admin)).rejects.toThrow(/^synchronous_commit is off on 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+: /);
      const { rows } = await t.admin.query<{ tables: number; lifted: number }>(
        `SELECT count(*)::int AS tables, count(*) FILTER (WHERE NOT c.relforcerowsecurity)::int AS lifted
         FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid WHERE c.relrowsecurity`,
      );
      expect(rows[0]!.tables).toBeGreaterThan(0);
      expect(rows[0]!.lifted).toBe(0);
    } finally {
      await t.admin.query(`SELECT run_command_on_workers($$ALTER DATABASE ${database} RESET synchronous_commit$$)`);
    }
  });
});
