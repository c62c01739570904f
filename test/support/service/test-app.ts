import { createSigner } from 'fast-jwt';
import type pg from 'pg';
import { type App, type AppDeps, buildApp } from '../../../services/api/app.js';
import { type Config, loadConfig } from '../../../services/config/config.js';
import { type DemoEngine, startDemoEngine } from '../../../services/db/demo/demo-engine.js';
import { type Database, openDatabase } from '../../../services/db/pool.js';
import { prepareAnswerer } from '../../../services/providers/answerers/answerer-start.js';
import { createProviders } from '../../../services/providers/index.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../databases/test-database.js';

export const TEST_JWT_SECRET = 'test-secret-that-is-at-least-32-characters-long';

export interface TestClock {
  now: Date;
  advance(ms: number): void;
}

export interface TestApp {
  app: App;
  config: Config;
  /** What the service uses: embedded, the superuser; on the server, the test login, held to row-level security. */
  database: Database;
  /** SQL_DATABASE_URL=embedded-demo: the demo's engine, to read what its data holds. */
  demoEngine?: DemoEngine;
  /** Sees and writes every row, above row-level security, to seed and inspect: the superuser. */
  admin: pg.Pool;
  baseUrl: string;
  clock: TestClock;
  token(sub: string, claims?: Record<string, unknown>): string;
  /** fetch against the running server, JSON in and out. */
  request(
    method: string,
    url: string,
    options?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<{
    status: number;
    headers: Headers;
    body: any;
  }>;
  close(): Promise<void>;
}

/**
 * The real service over HTTP on a random port, with a database of its own (embedded, or on the
 * PostgreSQL server in the `server` project: test/support/databases/test-database.ts) and configuration from
 * `env` (JWT_SECRET is set unless overridden). `options.database` opens `options.testDatabase` in a
 * way of the test's own (through a fault proxy).
 */
export async function startTestApp(
  env: Record<string, string | undefined> = {},
  options: {
    testDatabase?: TestDatabase;
    database?: Database;
    logger?: AppDeps['logger'];
    keepTestDatabase?: boolean;
    /** Where to listen, when a setting must name the service's own address before it starts (ACCOUNT_LINK_REDIRECT_URL); default a free port. */
    port?: number;
  } = {},
): Promise<TestApp> {
  const testDatabase = options.testDatabase ?? (await freshTestDatabase());
  const config = loadConfig({
    JWT_SECRET: TEST_JWT_SECRET,
    // The suite's fake answerers take any request; tests of credentials (test/api/routes/memory-chat/answerers/denodo-sdk.test.ts) set ANSWER_AUTH.
    ANSWER_AUTH: 'none',
    ...testDatabase.env,
    LOG_LEVEL: 'silent',
    // An erasure's reclaim waits for no other: a test that merges reclaims sets its own window.
    ERASE_RECLAIM_WINDOW: '0ms',
    ...env,
  });
  const database = options.database ?? (await openDatabase(config));
  const admin = adminPool(testDatabase, database);
  const clock: TestClock = {
    now: new Date(),
    advance(ms) {
      this.now = new Date(this.now.getTime() + ms);
    },
  };
  // As the service's start does (services/api/server.ts): a login that could reach the memory is refused.
  const { demoEngine } = await prepareAnswerer(config, {
    memory: database.pool,
    startDemoEngine: () => startDemoEngine({ waitMs: config.SQL_POOL_WAIT_MS }),
  }).catch(async (err) => {
    if (!options.database) await database.close();
    await admin.close();
    if (!options.keepTestDatabase) await testDatabase.remove();
    throw err;
  });
  const app = await buildApp({
    config,
    db: database.pool,
    ...createProviders(config, { demoEngine }),
    clock: () => clock.now,
    logger: options.logger,
  });
  await app.listen({ port: options.port ?? 0, host: '127.0.0.1' });
  const address = app.server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const sign = createSigner({ key: config.JWT_SECRET ?? TEST_JWT_SECRET, algorithm: 'HS256', expiresIn: 3_600_000 });

  return {
    app,
    config,
    database,
    admin: admin.pool,
    ...(demoEngine ? { demoEngine } : {}),
    baseUrl,
    clock,
    token: (sub, claims = {}) => sign({ sub, ...claims }),
    async request(method, url, { token, body, headers = {} } = {}) {
      const response = await fetch(`${baseUrl}${url}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON: keep the text
      }
      return { status: response.status, headers: response.headers, body: parsed };
    },
    async close() {
      await app.close();
      await database.close();
      await admin.close();
      if (!options.keepTestDatabase) await testDatabase.remove();
    },
  };
}
