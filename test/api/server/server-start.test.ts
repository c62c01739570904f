import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterTemplateDir } from '../../../services/db/embedded/cluster-template.mjs';
import { startEmbeddedPostgres } from '../../../services/db/embedded/embedded-postgres.js';
import { freshDataDir } from '../../support/databases/test-database.js';
import { startFakeOpenAI } from '../../support/fakes/fake-llm.js';
import { salesReply, startFakeUpstream } from '../../support/fakes/fake-upstream.js';

// The compiled entry points, as `npm start`, `npm run token` and the image run them (build-setup.ts builds dist/).
const SERVER = 'dist/services/api/server.js';
const children: ChildProcess[] = [];
const dirs: string[] = [];

/** Starts the real entry point (`npm start`) and resolves with its URL once it logs "ready". */
function startServer(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [SERVER], {
    env: { PATH: process.env.PATH, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const url = /Server listening at (http:\/\/[^"\s]+)/.exec(out)?.[1];
      if (url && out.includes('memorychat ready')) resolve({ url, child });
    });
    child.stderr!.on('data', (chunk) => (out += chunk));
    child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
}

function runScript(script: string, args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [script, ...args], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });
}

describe('the server entry point', () => {
  afterAll(async () => {
    for (const child of children) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('when started with no JWT settings, then it serves on loopback and `npm run token` gives a working token; a session survives a restart', async () => {
    const upstream = await startFakeUpstream();
    const dataDir = await freshDataDir();
    dirs.push(dataDir);
    const env = { DATA_DIR: dataDir, ANSWER_URL: upstream.answerUrl, ANSWER_AUTH: 'none' };
    try {
      const { url, child } = await startServer(env);
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:/);
      const token = runScript('dist/scripts/token.js', ['--sub', 'alice'], env).stdout.trim();
      const ask = (body: object) =>
        fetch(`${url}/memoryChat`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
      const first = await ask({ question: 'Show me total sales by region for 2024' });
      expect(first.status).toBe(200);
      const sessionId = first.body.conversation_metadata.conversation_id;

      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;

      const restarted = await startServer(env);
      const second = await fetch(`${restarted.url}/memoryChat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ question: 'What about 2023?', session_id: sessionId }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
      expect(second.status).toBe(200);
      expect(second.body.conversation_metadata.message_count).toBe(2);
      expect(upstream.lastBody().custom_instructions).toContain(salesReply('2024').sql_query);
    } finally {
      await upstream.close();
    }
  }, 90_000);

  it('when started with ANSWER_BACKEND=sql and SQL_DATABASE_URL=embedded-demo, then the demo answers, and again after a restart on the loaded demo', async () => {
    const sql = "SELECT region, SUM(amount) AS total_sales FROM demo.sales WHERE order_date >= '2024-01-01' GROUP BY region";
    const openai = await startFakeOpenAI(() => ({
      structured: { kind: 'sql', sql, explanation: 'Sales per region.', tables: ['demo.sales'] },
    }));
    const dataDir = await freshDataDir();
    dirs.push(dataDir);
    const env = {
      DATA_DIR: dataDir,
      ANSWER_BACKEND: 'sql',
      SQL_DATABASE_URL: 'embedded-demo',
      LLM_PROVIDER: 'openai',
      LLM_MODEL: 'test-model',
      OPENAI_API_KEY: 'test',
      OPENAI_BASE_URL: openai.baseURL,
    };
    try {
      for (let start = 0; start < 2; start++) {
        const { url, child } = await startServer(env);
        const token = runScript('dist/scripts/token.js', ['--sub', 'alice'], env).stdout.trim();
        const reply = await fetch(`${url}/memoryChat`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ question: 'Show me total sales by region for 2024' }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
        expect(reply.status, `start ${start + 1}`).toBe(200);
        expect(reply.body.sql_query).toBe(sql);
        expect(Object.keys(reply.body.execution_result)).toHaveLength(4);
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
    } finally {
      await openai.close();
    }
  }, 90_000);

  it('when `npm run migrate` runs on an empty data directory, then the compiled runner finds and applies every migration file', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-compiled-'));
    dirs.push(dataDir);
    const migrations = readdirSync('services/db/migrations').filter((f) => f.endsWith('.sql'));
    // After the install step (CI's `npm ci`), a new data directory is a copy of its migrated template
    // cluster, which the compiled code copies only when it finds the same migration files in dist/.
    const fromTemplate = await stat(path.join(await clusterTemplateDir(), 'pg', 'PG_VERSION')).then(
      () => true,
      () => false,
    );
    const first = runScript('dist/scripts/migrate.js', [], { DATA_DIR: dataDir });
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain(fromTemplate ? 'database is up to date' : `applied ${migrations.length} migration(s)`);
    const again = runScript('dist/scripts/migrate.js', [], { DATA_DIR: dataDir });
    expect(again.stdout).toContain('database is up to date');
    const embedded = await startEmbeddedPostgres(dataDir);
    const client = new pg.Client(embedded.connection);
    try {
      await client.connect();
      const { rows } = await client.query<{ name: string }>('SELECT name FROM migrations WHERE id > 0 ORDER BY id');
      // postgres-migrations records a file by its name without the number and the extension.
      expect(rows.map((r) => r.name)).toEqual(migrations.sort().map((f) => f.replace(/^\d+_/, '').replace(/\.sql$/, '')));
    } finally {
      await client.end();
      await embedded.stop();
    }
  }, 60_000);

  it('when a variable is invalid, then the start fails with a message naming it', () => {
    const result = runScript(SERVER, [], { PORT: 'eighty', MEMORY_TTL_MODE: 'forever' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/PORT/);
    expect(result.stderr).toMatch(/MEMORY_TTL_MODE/);
  });

  it('when NODE_ENV=production has no JWT settings, then the start fails', () => {
    const result = runScript(SERVER, [], { NODE_ENV: 'production' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL/);
  });
});
