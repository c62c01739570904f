import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keepReadable, viewGateFor } from '../../../services/core/views/readable-memory.js';
import { createViewPermissions } from '../../../services/providers/answerers/view-permissions.js';
import { basicAuth, type DenodoSdkStandIn, SDK_RELEASES, startDenodoSdkStandIn } from '../../support/fakes/denodo-sdk-stand-in.js';

/** Which views a caller may read now, asked of the Denodo AI SDK stand-in (docs/denodo-ai-sdk.md#views-readable-now). */

const VIEWS = [
  { name: 'sales_db.sales', columns: [{ name: 'region' }] },
  { name: 'hr_db.employees', columns: [{ name: 'name' }] },
];
const USERS = {
  alice: { password: 'alice-pw', views: ['sales_db.sales', 'hr_db.employees'] },
  bob: { password: 'bob-pw', views: ['hr_db.employees'] },
};
const ALICE = basicAuth('alice', 'alice-pw');
const BOB = basicAuth('bob', 'bob-pw');

describe('view permissions from the Denodo AI SDK 1.4', () => {
  let sdk: DenodoSdkStandIn;
  let now = 0;
  const settings = (entries: number) =>
    createViewPermissions(
      {
        ANSWER_URL: sdk.answerUrl,
        answerAuth: 'forward',
        viewPermissionsTtlMs: 60_000,
        MEMORY_VIEW_PERMISSIONS_CACHE_ENTRIES: entries,
      },
      () => now,
    );
  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS, release: '1.4' });
  });
  afterAll(async () => {
    await sdk?.close();
  });

  it('when two users ask of the same views, then each gets what VDP lets their own credentials read, quoted names or not', async () => {
    const permissions = settings(10);
    const items = [{ sql_query: null, tables_used: ['sales_db.sales', 'hr_db.employees'] }];
    const alice = await viewGateFor(permissions, { tenantId: 't', userId: 'a', upstreamAuthorization: ALICE }, items);
    const bob = await viewGateFor(permissions, { tenantId: 't', userId: 'b', upstreamAuthorization: BOB }, items);
    const turns = [
      { sql_query: null, tables_used: ['"sales_db"."sales"'] },
      { sql_query: null, tables_used: ['hr_db.employees'] },
      { sql_query: null, tables_used: [] },
    ];
    expect(keepReadable(turns, alice)).toEqual({ kept: turns, leftOut: 0 });
    expect(keepReadable(turns, bob)).toEqual({ kept: turns.slice(1), leftOut: 1 });
  });

  it('when more callers ask than MEMORY_VIEW_PERMISSIONS_CACHE_ENTRIES holds, then the least recently used is asked again; within the TTL no one is', async () => {
    const permissions = settings(1);
    const lookups = () => sdk.permissionLookups.length;
    const start = lookups();
    const ask = (userId: string, authorization: string) =>
      permissions.readable({ tenantId: 't', userId, upstreamAuthorization: authorization }, ['hr_db.employees']);
    await ask('a', ALICE);
    await ask('a', ALICE);
    expect(lookups() - start).toBe(1);
    await ask('b', BOB);
    await ask('a', ALICE);
    expect(lookups() - start).toBe(3);
    now += 60_001;
    await ask('a', ALICE);
    expect(lookups() - start).toBe(4);
  });

  it('when the caller sends no credentials, or the SDK refuses them, then the permissions are unavailable and nothing is left out', async () => {
    const permissions = settings(10);
    await expect(permissions.readable({ tenantId: 't', userId: 'x' }, ['sales_db.sales'])).resolves.toMatchObject({
      status: 'unavailable',
    });
    const refused = await permissions.readable({ tenantId: 't', userId: 'y', upstreamAuthorization: basicAuth('alice', 'wrong') }, [
      'sales_db.sales',
    ]);
    expect(refused).toEqual({ status: 'unavailable', reason: '/getUserPermissions answered HTTP 401' });
    const gate = await viewGateFor(permissions, { tenantId: 't', userId: 'x' }, [{ sql_query: null, tables_used: ['sales_db.sales'] }]);
    const item = { sql_query: null, tables_used: ['sales_db.sales'] };
    expect(keepReadable([item], gate)).toEqual({ kept: [item], leftOut: 0 });
    expect(gate?.status).toBe('unavailable');
  });
});

describe.each(SDK_RELEASES)('getUserPermissions at the Denodo AI SDK %s', (release) => {
  let sdk: DenodoSdkStandIn;
  const hasIt = release === '1.2.1' || release === '1.4';
  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS, release });
  });
  afterAll(async () => {
    await sdk?.close();
  });

  it(`when asked with the caller's credentials, then it ${hasIt ? 'answers the profile without views' : "is FastAPI's 404"}, and memorychat's check is ${hasIt ? 'checked' : 'unavailable'}`, async () => {
    const response = await fetch(`${sdk.url}/getUserPermissions`, { headers: { authorization: BOB } });
    const openApi = (await (await fetch(sdk.openApiUrl)).json()) as { paths: Record<string, unknown> };
    if (hasIt) {
      expect([response.status, await response.json()]).toEqual([
        200,
        { username: 'bob', is_admin: false, roles: [], legacy_permissions_endpoint: false },
      ]);
      expect(Object.keys(openApi.paths)).toContain('/getUserPermissions');
      const refused = await fetch(`${sdk.url}/getUserPermissions`, { headers: { authorization: basicAuth('bob', 'wrong') } });
      expect(refused.status).toBe(401);
    } else {
      expect([response.status, await response.json()]).toEqual([404, { detail: 'Not Found' }]);
      expect(Object.keys(openApi.paths)).not.toContain('/getUserPermissions');
    }
    const permissions = createViewPermissions({
      ANSWER_URL: sdk.answerUrl,
      answerAuth: 'forward',
      viewPermissionsTtlMs: 60_000,
      MEMORY_VIEW_PERMISSIONS_CACHE_ENTRIES: 10,
    });
    const answer = await permissions.readable({ tenantId: 't', userId: 'b', upstreamAuthorization: BOB }, [
      'sales_db.sales',
      'hr_db.employees',
    ]);
    expect(answer).toEqual(
      hasIt
        ? { status: 'checked', readable: new Set(['hr_db.employees']) }
        : { status: 'unavailable', reason: 'the Denodo AI SDK has no /getUserPermissions (it came with 1.2)' },
    );
  });
});
