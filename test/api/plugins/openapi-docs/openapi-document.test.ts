// The published contract: what generated clients and linters rely on, for every operation (routes
// added later included), and the same document whatever the deployment's configuration.
import { describe, expect, it } from 'vitest';
import { withAppWithoutDatabase } from '../../../support/service/app-without-database.js';

type Operation = {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { in: string; name: string; required?: boolean; schema?: { default?: unknown } }[];
};
type Document = { paths: Record<string, Record<string, Operation>>; servers?: unknown[] };

// The account-link callback: the browser coming back from the identity provider carries no token.
const PUBLIC_PATHS = ['/healthz', '/readyz', '/account-link/callback'];

function documentFor(env: Record<string, string>): Promise<Document> {
  return withAppWithoutDatabase({ JWT_SECRET: 'x'.repeat(32), ...env }, async (app) => structuredClone(app.swagger()) as Document);
}

function operations(document: Document): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]): [string, Operation] => [`${method.toUpperCase()} ${path}`, operation]),
  );
}

describe('the OpenAPI document', () => {
  it('when any operation is listed, then it has a unique operationId and a tag', async () => {
    const listed = operations(await documentFor({}));
    expect(listed.length).toBeGreaterThan(20);

    const missing = listed.filter(([, op]) => !op.operationId || !op.tags?.length).map(([name]) => name);
    expect(missing).toEqual([]);
    const ids = listed.map(([, op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('when an operation is public, then it says `security: []`; an admin one asks for the bearer token; every other one for it or an API key', async () => {
    const document = await documentFor({});
    expect(document.servers).toEqual([expect.objectContaining({ url: '/' })]);
    for (const [name, op] of operations(document)) {
      const isPublic = PUBLIC_PATHS.some((path) => name.endsWith(` ${path}`));
      // No API key carries the memory-admin role (docs/api-keys.md).
      const expected = isPublic ? [] : op.tags?.includes('admin') ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, { apiKeyAuth: [] }];
      expect({ name, security: op.security }).toEqual({ name, security: expected });
    }
  });

  it('when a query parameter has a default, then it is optional', async () => {
    const withDefaults = operations(await documentFor({})).flatMap(([name, op]) =>
      (op.parameters ?? [])
        .filter((p) => p.in === 'query' && p.schema?.default !== undefined)
        .map((p) => ({ name, param: p.name, required: p.required })),
    );
    // GET /sessions limit, …/result.csv fresh, GET /admin/jobs/failed limit at least.
    expect(withDefaults.length).toBeGreaterThanOrEqual(3);
    expect(withDefaults.filter((p) => p.required)).toEqual([]);
  });

  it('when the rate limit is off, CORS is on, production or local mode, the playground on or off, then the document is the same', async () => {
    const published = JSON.stringify(await documentFor({}));
    const variants: Record<string, string>[] = [
      { RATE_LIMIT_PER_MINUTE: '0' },
      { CORS_ORIGINS: 'https://chat.example.com' },
      { NODE_ENV: 'production' },
      { JWT_SECRET: '' },
      { JWT_SECRET: '', PLAYGROUND: 'off' },
      { PLAYGROUND: 'on' },
    ];
    for (const env of variants) {
      expect({ env, same: JSON.stringify(await documentFor(env)) === published }).toEqual({ env, same: true });
    }
  });

  it('when Swagger UI is loaded, then it keeps the token typed into "Authorize" across reloads', async () => {
    const initializer = await withAppWithoutDatabase(
      { JWT_SECRET: 'x'.repeat(32) },
      async (app) => (await app.inject('/docs/static/swagger-initializer.js')).body,
    );
    expect(initializer).toMatch(/"persistAuthorization":\s*true/);
  });

  it('when /docs is asked to load another document (?url=, ?configUrl=), then 400', async () => {
    const [url, configUrl, plain] = await withAppWithoutDatabase({ JWT_SECRET: 'x'.repeat(32) }, async (app) => [
      await app.inject('/docs/?url=https://evil.test/spec.json'),
      await app.inject('/docs/static/index.html?configUrl=https://evil.test/config.json'),
      await app.inject('/docs/'),
    ]);
    for (const refused of [url, configUrl]) {
      expect(refused.statusCode).toBe(400);
      expect(refused.headers['content-type']).toContain('application/problem+json');
    }
    expect(plain.statusCode).not.toBe(400);
  });
});
