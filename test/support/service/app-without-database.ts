import pg from 'pg';
import { type App, buildApp } from '../../../services/api/app.js';
import { loadConfig } from '../../../services/config/config.js';
import { createAnswerer } from '../../../services/providers/answerers/index.js';
import { createEmbedder } from '../../../services/providers/embeddings/index.js';

/**
 * The app on a pool that never connects, for what reaches no table (the OpenAPI document, the
 * playground's files and its local token), closed after `use`.
 */
export async function withAppWithoutDatabase<T>(
  env: Record<string, string>,
  use: (app: App) => Promise<T>,
  localSecret = 'l'.repeat(32),
): Promise<T> {
  const config = loadConfig(env);
  const db = new pg.Pool({ max: 1 });
  const app = await buildApp({ config, db, embedder: createEmbedder(config), answerer: createAnswerer(config), localSecret });
  try {
    await app.ready();
    return await use(app);
  } finally {
    await app.close();
    await db.end();
  }
}
