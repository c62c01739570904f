// A pooled connection's prepared statements go with it, and the next connection plans the retrieval
// statement again: on a server the pool keeps idle connections for DATABASE_POOL_IDLE_SECONDS (600 s,
// where pg's own default is 10 s), and closes them after it; the embedded database's one connection
// is never closed (docs/scaling.md).
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../services/config/config.js';
import { type Database, openDatabase } from '../../services/db/pool.js';
import { freshTestDatabase, type TestDatabase } from '../support/databases/test-database.js';

describe('idle pooled connections', () => {
  let testDb: TestDatabase | undefined;
  let db: Database | undefined;

  afterEach(async () => {
    await db?.close();
    await testDb?.remove();
    db = undefined;
    testDb = undefined;
  });

  const prepareProbe = (database: Database) => database.pool.query({ name: 'idle_probe', text: 'SELECT 1 AS one' });
  const preparedNames = async (database: Database) =>
    (await database.pool.query<{ name: string }>('SELECT name FROM pg_prepared_statements')).rows.map((r) => r.name);

  it('when DATABASE_POOL_IDLE_SECONDS is not set, then idle connections are kept for 600 s', () => {
    expect(loadConfig({}).DATABASE_POOL_IDLE_SECONDS).toBe(600);
  });

  it('when a connection was idle for less than DATABASE_POOL_IDLE_SECONDS, then it is reused with its prepared statements, and after it, it is closed (server) or kept (embedded)', async () => {
    testDb = await freshTestDatabase();
    db = await openDatabase(loadConfig({ ...testDb.env, DATABASE_POOL_MAX: '1', DATABASE_POOL_IDLE_SECONDS: '2' }));
    await prepareProbe(db);
    await sleep(1_000);
    expect(await preparedNames(db)).toContain('idle_probe');

    await sleep(3_000);
    if (testDb.env.DATABASE_URL) {
      expect(db.pool.totalCount).toBe(0);
      expect(await preparedNames(db)).not.toContain('idle_probe');
    } else {
      expect(await preparedNames(db)).toContain('idle_probe');
    }
  });

  it('when DATABASE_POOL_IDLE_SECONDS is negative or not a number, then the configuration is refused', () => {
    expect(() => loadConfig({ DATABASE_POOL_IDLE_SECONDS: '-1' })).toThrow(/DATABASE_POOL_IDLE_SECONDS/);
    expect(() => loadConfig({ DATABASE_POOL_IDLE_SECONDS: 'soon' })).toThrow(/DATABASE_POOL_IDLE_SECONDS/);
  });
});
