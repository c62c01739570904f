// The embedded database has no autovacuum, so the service analyzes its grown tables itself
// (services/db/embedded/table-statistics.ts); without statistics the planner read a session's turns
// through a scan of all its user's turns.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeGrownTables } from '../../../services/db/embedded/table-statistics.js';
import { type Database, openDatabase } from '../../../services/db/pool.js';
import { freshDataDir } from '../../support/databases/test-database.js';
import { seedSession } from '../../support/service/seed-memory.js';

const HOUR = 3_600_000;

describe('statistics of the embedded database', () => {
  let dataDir: string;
  let db: Database | undefined;

  beforeAll(async () => {
    dataDir = await freshDataDir();
  });
  afterAll(async () => {
    await db?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const tableStatistics = async (database: Database) =>
    (
      await database.pool.query<{ relname: string; reltuples: number; columns: number }>(
        `SELECT c.relname, c.reltuples::float8 AS reltuples,
                (SELECT count(*)::int FROM pg_stats s WHERE s.tablename = c.relname AND s.schemaname = current_schema()) AS columns
         FROM pg_class c WHERE c.relname IN ('sessions', 'turns') AND c.relnamespace = current_schema()::regnamespace ORDER BY 1`,
      )
    ).rows;

  it('when the tables grew while the service was stopped, then opening the database analyzes them, and a check with nothing grown analyzes nothing', async () => {
    db = await openDatabase({ DATA_DIR: dataDir, DATABASE_POOL_MAX: 1 });
    for (let i = 0; i < 6; i++)
      await seedSession(db.pool, { userId: `stats-user-${i % 3}`, turns: 60, expiresAt: new Date(Date.now() + HOUR) });
    // A plain VACUUM (as CREATE INDEX) counts a table's rows but gathers no statistics.
    await db.pool.query('VACUUM turns');
    // Not yet: the start's pass found the tables empty, and the next is 30 s away.
    expect((await tableStatistics(db)).map((t) => [t.reltuples, t.columns])).toEqual([
      [-1, 0],
      [360, 0],
    ]);
    await db.close();

    db = await openDatabase({ DATA_DIR: dataDir, DATABASE_POOL_MAX: 1 });
    await expect
      .poll(async () => (await tableStatistics(db!)).map((t) => [t.relname, t.reltuples, t.columns > 0]), { timeout: 20_000 })
      .toEqual([
        ['sessions', 6, true],
        ['turns', 360, true],
      ]);
    expect(await analyzeGrownTables(db.pool)).toEqual([]);
  });

  it('when a table grows by more than a tenth since it was analyzed, then the next check analyzes it alone', async () => {
    await seedSession(db!.pool, { userId: 'stats-user-9', turns: 200, expiresAt: new Date(Date.now() + HOUR) });
    expect(await analyzeGrownTables(db!.pool)).toEqual(['turns']);
    expect((await tableStatistics(db!)).find((t) => t.relname === 'turns')!.reltuples).toBe(560);
  });
});
