import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSigner } from 'fast-jwt';
import { inject } from 'vitest';
import { openDatabase, type Database } from '../../db/pool.js';
import { buildApp, type App, type AppDeps } from '../../services/api/app.js';
import { loadConfig, type Config } from '../../services/config/config.js';
import { createProviders } from '../../services/providers/index.js';

export const TEST_JWT_SECRET = 'test-secret-that-is-at-least-32-characters-long';

export interface TestClock {
  now: Date;
  advance(ms: number): void;
}

export interface TestApp {
  app: App;
  config: Config;
  database: Database;
  dataDir: string;
  baseUrl: string;
  clock: TestClock;
  token(sub: string, claims?: Record<string, unknown>): string;
  /** fetch against the running server, JSON in and out. */
  request(method: string, url: string, options?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<{
    status: number;
    headers: Headers;
    body: any;
  }>;
  close(): Promise<void>;
}

/** A fresh embedded database (copied from the migrated template) in its own directory. */
export async function freshDataDir(): Promise<string> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-test-'));
  await cp(inject('templateDataDir'), dataDir, { recursive: true });
  return dataDir;
}

/**
 * The real service over HTTP on a random port, with an embedded Postgres of its own and
 * configuration from `env` (JWT_SECRET is set unless overridden).
 */
export async function startTestApp(
  env: Record<string, string | undefined> = {},
  options: { dataDir?: string; keepDataDir?: boolean; database?: Database; logger?: AppDeps['logger'] } = {},
): Promise<TestApp> {
  const dataDir = options.dataDir ?? (await freshDataDir());
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env });
  const database = options.database ?? (await openDatabase(config));
  const clock: TestClock = {
    now: new Date(),
    advance(ms) {
      this.now = new Date(this.now.getTime() + ms);
    },
  };
  const app = await buildApp({
    config,
    db: database.pool,
    ...createProviders(config),
    clock: () => clock.now,
    logger: options.logger,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const sign = createSigner({ key: config.JWT_SECRET ?? TEST_JWT_SECRET, algorithm: 'HS256', expiresIn: 3_600_000 });

  return {
    app,
    config,
    database,
    dataDir,
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
      if (!options.keepDataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
