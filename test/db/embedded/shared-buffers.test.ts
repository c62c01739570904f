// The embedded database's buffer pool is resident from the start (PGlite touches it whole), so it is
// small by default and EMBEDDED_SHARED_BUFFERS_MB raises it for a heavy user's approximate index
// (docs/scaling.md).
import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/config.js';
import { type Database, openDatabase } from '../../../services/db/pool.js';
import { freshDataDir } from '../../support/databases/test-database.js';

describe("the embedded database's shared buffers", () => {
  let dataDir: string | undefined;
  let db: Database | undefined;

  afterEach(async () => {
    await db?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    db = undefined;
  });

  const sharedBuffers = async (database: Database) =>
    (await database.pool.query<{ shared_buffers: string }>('SHOW shared_buffers')).rows[0]!.shared_buffers;

  it('when EMBEDDED_SHARED_BUFFERS_MB is not set, then the database runs with 32 MB', async () => {
    dataDir = await freshDataDir();
    db = await openDatabase({ DATA_DIR: dataDir, DATABASE_POOL_MAX: 1 });
    expect(await sharedBuffers(db)).toBe('32MB');
  });

  it('when EMBEDDED_SHARED_BUFFERS_MB is set, then the database runs with that many megabytes', async () => {
    dataDir = await freshDataDir();
    const config = loadConfig({ DATA_DIR: dataDir, EMBEDDED_SHARED_BUFFERS_MB: '48' });
    db = await openDatabase(config);
    expect(await sharedBuffers(db)).toBe('48MB');
  });

  it('when EMBEDDED_SHARED_BUFFERS_MB is below 16 or not a number, then the configuration is refused', () => {
    expect(() => loadConfig({ EMBEDDED_SHARED_BUFFERS_MB: '8' })).toThrow(/EMBEDDED_SHARED_BUFFERS_MB/);
    expect(() => loadConfig({ EMBEDDED_SHARED_BUFFERS_MB: 'lots' })).toThrow(/EMBEDDED_SHARED_BUFFERS_MB/);
  });
});
