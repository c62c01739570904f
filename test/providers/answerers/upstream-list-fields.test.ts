import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUpstreamAnswerer } from '../../../services/providers/answerers/upstream-answerer.js';
import { encodingAskedBy422, listEncodingOf } from '../../../services/providers/answerers/upstream-list-fields.js';
import { basicAuth, type DenodoSdkStandIn, SDK_RELEASES, startDenodoSdkStandIn } from '../../support/fakes/denodo-sdk-stand-in.js';

/** How memorychat learns whether the Denodo AI SDK takes lists or comma-separated strings (docs/denodo-ai-sdk.md#releases). */

const VIEWS = [{ name: 'sales_db.sales', columns: [{ name: 'region' }, { name: 'year' }] }];
const USERS = { alice: { password: 'alice-pw', views: ['sales_db.sales'] } };
const ALICE = basicAuth('alice', 'alice-pw');

const logged = () => {
  const lines: { obj: object; msg: string }[] = [];
  return { lines, log: { warn() {}, info: (obj: object, msg: string) => lines.push({ obj, msg }) } };
};

describe.each(SDK_RELEASES)('the list encoding at first contact with the Denodo AI SDK %s', (release) => {
  let sdk: DenodoSdkStandIn;
  const agent = new Agent();
  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS, release });
  });
  afterAll(async () => {
    await agent.close();
    await sdk?.close();
  });

  it('when ANSWER_LIST_FIELDS is auto, then the /openapi.json the SDK serves decides, once, and the log says what was found', async () => {
    const { lines, log } = logged();
    const lists = listEncodingOf({ setting: 'auto', url: sdk.answerUrl, agent, timeoutMs: 5000, log });
    const [first, again] = await Promise.all([lists.current(), lists.current()]);
    expect(first).toBe(release === '1.4' ? 'list' : 'comma');
    expect(again).toBe(first);
    expect(sdk.requests.filter((r) => r.path === '/openapi.json')).toHaveLength(1);
    // answerDataQuestion as ANSWER_URL reads its own request model.
    await expect(listEncodingOf({ setting: 'auto', url: sdk.dataUrl, agent, timeoutMs: 5000 }).current()).resolves.toBe(first);
    expect(lines).toEqual([
      { obj: expect.objectContaining({ listEncoding: first, detected: true }), msg: expect.stringContaining('(from its /openapi.json)') },
    ]);
  });

  it('when a list field goes in the other form, then FastAPI’s 422 names it and asks for the form of the release', async () => {
    const wrong = release === '1.4' ? 'sales_db.sales' : ['sales_db.sales'];
    const response = await fetch(sdk.answerUrl, {
      method: 'POST',
      headers: { authorization: ALICE, 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'Sales', use_views: wrong }),
    });
    expect(response.status).toBe(422);
    const body = await response.json();
    expect(body).toEqual({
      detail: [
        release === '1.4'
          ? { type: 'list_type', loc: ['body', 'use_views'], msg: 'Input should be a valid list', input: 'sales_db.sales' }
          : { type: 'string_type', loc: ['body', 'use_views'], msg: 'Input should be a valid string', input: ['sales_db.sales'] },
      ],
    });
    expect(encodingAskedBy422(body.detail)).toBe(release === '1.4' ? 'list' : 'comma');
  });
});

describe('the list encoding without /openapi.json', () => {
  let sdk: DenodoSdkStandIn;
  beforeAll(async () => {
    sdk = await startDenodoSdkStandIn({ views: VIEWS, users: USERS, release: '1.4', openApi: false });
  });
  afterAll(async () => {
    await sdk?.close();
  });

  it('when the SDK answers 422 naming use_views, then the question is asked again once with lists, and lists are sent from then on', async () => {
    const { lines, log } = logged();
    const answerer = createUpstreamAnswerer({ url: sdk.answerUrl, auth: 'forward', timeoutMs: 5000, maxReplyBytes: 65_536, log });
    try {
      const ask = () =>
        answerer.answer({ question: 'Sales by region for 2024', params: {}, useViews: ['sales_db.sales'], upstreamAuthorization: ALICE });
      expect((await ask()).sqlQuery).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024');
      expect((await ask()).sqlQuery).toBe('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024');
      const posted = sdk.requests.filter((r) => r.method === 'POST').map((r) => r.body.use_views);
      expect(posted).toEqual(['sales_db.sales', ['sales_db.sales'], ['sales_db.sales']]);
      expect(lines.map((l) => l.msg)).toEqual([
        expect.stringContaining('does not say how it takes'),
        expect.stringContaining('refused comma-separated strings'),
      ]);
    } finally {
      await answerer.close?.();
    }
  });

  it('when ANSWER_LIST_FIELDS names an encoding, then it is sent as set, nothing is looked up and a 422 is not retried', async () => {
    const before = sdk.requests.length;
    const answerer = createUpstreamAnswerer({
      url: sdk.answerUrl,
      auth: 'forward',
      timeoutMs: 5000,
      maxReplyBytes: 65_536,
      listFields: 'comma',
    });
    try {
      await expect(
        answerer.answer({ question: 'Sales', params: { vdp_database_names: ['sales_db'] }, upstreamAuthorization: ALICE }),
      ).rejects.toMatchObject({ code: 'upstream-rejected' });
      expect(sdk.requests.slice(before).map((r) => [r.method, r.path, r.body?.vdp_database_names])).toEqual([
        ['POST', '/answerQuestion', 'sales_db'],
      ]);
    } finally {
      await answerer.close?.();
    }
  });
});
