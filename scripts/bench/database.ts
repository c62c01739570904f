// The bench opens the embedded database exactly as the service does: db/pool.ts (one connection).
import { cp, rm } from 'node:fs/promises';
import { migrate } from '../../services/db/migrate.js';
import { type Database, openDatabase } from '../../services/db/pool.js';

export async function openBenchDatabase(dataDir: string, runMigrations = false, sharedBuffersMb?: number): Promise<Database> {
  const db = await openDatabase({
    DATA_DIR: dataDir,
    DATABASE_URL: undefined,
    DATABASE_POOL_MAX: 1,
    EMBEDDED_SHARED_BUFFERS_MB: sharedBuffersMb,
  });
  if (runMigrations) await migrate(db.pool);
  return db;
}

/** A byte copy of a stopped data directory, so every phase starts from the same seeded state. */
export async function copyDataDir(from: string, to: string): Promise<void> {
  await rm(to, { recursive: true, force: true });
  await cp(from, to, { recursive: true });
}
