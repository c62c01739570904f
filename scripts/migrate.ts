// `npm run migrate`: applies services/db/migrations to DATABASE_URL, or to the embedded database in DATA_DIR.

import { loadConfig } from '../services/config/config.js';
import { migrate } from '../services/db/migrate.js';
import { openDatabase } from '../services/db/pool.js';

const config = loadConfig(process.env);
const database = await openDatabase(config);
try {
  const applied = await migrate(database.pool, (msg) => console.log(msg));
  console.log(applied.length ? `applied ${applied.length} migration(s)` : 'database is up to date');
} catch (err) {
  console.error(`migrate: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  await database.close();
}
