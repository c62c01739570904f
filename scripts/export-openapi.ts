// `npm run openapi` writes openapi/openapi.json from the route schemas;
// `npm run openapi:check` fails when the committed file differs from the routes (CI runs it).
import { readFile, writeFile } from 'node:fs/promises';
import pg from 'pg';
import { buildApp } from '../services/api/app.js';
import { loadConfig } from '../services/config/config.js';
import { createAnswerer } from '../services/providers/answerers/index.js';
import { createEmbedder } from '../services/providers/embeddings/index.js';

const SPEC_FILE = new URL('../openapi/openapi.json', import.meta.url);

// The documented defaults, not this shell's environment, shape the published document.
const config = loadConfig({ JWT_SECRET: 'x'.repeat(32) });
// A pool that is never used: building the document runs no query.
const db = new pg.Pool({ max: 1 });
const app = await buildApp({ config, db, embedder: createEmbedder(config), answerer: createAnswerer(config) });
await app.ready();
const spec = `${JSON.stringify(app.swagger(), null, 2)}\n`;
await app.close();
await db.end();

if (process.argv.includes('--check')) {
  const committed = await readFile(SPEC_FILE, 'utf8').catch(() => '');
  if (committed !== spec) {
    console.error('openapi/openapi.json does not match the routes: run `npm run openapi` and commit the result');
    process.exit(1);
  }
  console.log('openapi/openapi.json matches the routes');
} else {
  await writeFile(SPEC_FILE, spec);
  console.log('wrote openapi/openapi.json');
}
