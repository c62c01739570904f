import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERIFIED_PAIRS_HEADING } from '../../../../services/core/context/chat-block.js';
import { sendJson } from '../../../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

/**
 * A tenant's verified question/SQL pairs (docs/verified-pairs.md): a turn an admin promotes reaches
 * the memory of every user of its tenant whose request's database scope covers its databases, marked
 * as verified, and no one else's; its life cycle (edit, retire, feedback, adoption) and its author's
 * export and erasure.
 */
describe('verified pairs (/admin/verified-pairs, /memoryChat)', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let admin: string;
  const QUESTION = 'Show me total sales by region for 2024';

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({ JWT_DATABASES_CLAIM: 'dbs' }));
    // Views named by database, as the Denodo AI SDK names them: use_views keeps only those within scope.
    upstream.handle((req, res) => {
      const question = String(req.body?.question ?? '');
      sendJson(res, 200, { ...salesReply(question, String(req.body?.custom_instructions ?? '')), tables_used: ['salesdb.sales'] });
    });
    admin = t.token('acme-admin', { tenant: 'acme', roles: ['memory-admin'] });
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  const ask = async (token: string, body: Record<string, unknown>) => {
    const res = await t.request('POST', '/memoryChat', { token, body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return { reply: res.body, upstream: upstream.lastBody() as { custom_instructions?: string; use_views?: unknown } };
  };
  /** A user's answered turn over salesdb, promoted by the admin: the pair. */
  const promoted = async (user: string, question = QUESTION) => {
    const { reply } = await ask(t.token(user, { tenant: 'acme' }), { question, vdp_database_names: 'salesdb' });
    const res = await t.request('POST', '/admin/verified-pairs', {
      token: admin,
      body: { user_id: user, session_id: reply.conversation_metadata.conversation_id, turn_number: 1 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return { pair: res.body.pair, sessionId: reply.conversation_metadata.conversation_id as string };
  };
  const pairIdsIn = (reply: any): string[] => (reply.memory_context_used.verified_pairs ?? []).map((p: any) => p.pair_id);

  it("when an admin promotes one user's turn, then another user of the tenant gets it as a verified example within their databases, and no other tenant or scope ever does", async () => {
    const { pair, sessionId } = await promoted('alice');
    expect(pair).toMatchObject({
      question: QUESTION,
      sql_query: expect.stringContaining('2024'),
      tables_used: ['salesdb.sales'],
      vdp_database_names: ['salesdb'],
      author_user_id: 'alice',
      source: { session_id: sessionId, turn_number: 1 },
      promoted_via: 'admin',
      negative_feedback: 0,
    });
    // Promoting the same turn again gives the pair back.
    const again = await t.request('POST', '/admin/verified-pairs', {
      token: admin,
      body: { user_id: 'alice', session_id: sessionId, turn_number: 1 },
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, pair: { pair_id: pair.pair_id } });

    // Bob, a new user of the tenant, over the same database: the pair is in his memory, marked verified.
    const bob = await ask(t.token('bob', { tenant: 'acme' }), {
      question: 'Total sales by region in 2024?',
      vdp_database_names: 'salesdb',
    });
    expect(pairIdsIn(bob.reply)).toEqual([pair.pair_id]);
    expect(bob.reply.memory_context_used).toMatchObject({
      verified_pairs_count: 1,
      verified_pairs: [{ pair_id: pair.pair_id, question: QUESTION, views: ['salesdb.sales'], verified: true }],
      use_views: 'salesdb.sales',
    });
    expect(bob.upstream.custom_instructions).toContain(VERIFIED_PAIRS_HEADING);
    expect(bob.upstream.custom_instructions).toContain(pair.sql_query);

    // Outside the pair's database: another requested database, a token whose claim leaves it out, another tenant.
    const elsewhere = await ask(t.token('bob', { tenant: 'acme' }), { question: QUESTION, vdp_database_names: 'hr' });
    expect(pairIdsIn(elsewhere.reply)).toEqual([]);
    expect(elsewhere.upstream.custom_instructions ?? '').not.toContain(VERIFIED_PAIRS_HEADING);
    const claimOnlyHr = t.token('carol', { tenant: 'acme', dbs: ['hr'] });
    for (const body of [{ question: QUESTION }, { question: QUESTION, vdp_database_names: 'salesdb' }]) {
      const { reply } = await ask(claimOnlyHr, body);
      expect(pairIdsIn(reply)).toEqual([]);
    }
    const globex = await ask(t.token('bob', { tenant: 'globex' }), { question: QUESTION, vdp_database_names: 'salesdb' });
    expect(pairIdsIn(globex.reply)).toEqual([]);
    expect(globex.upstream.custom_instructions ?? '').not.toContain(pair.sql_query);

    // Row-level security: a statement with no WHERE clause in another tenant's scope sees none of acme's pairs.
    const { rows } = await t.app.db.asUser({ tenantId: 'globex', userId: 'bob' }).query('SELECT pair_id FROM verified_pairs');
    expect(rows).toEqual([]);
    const { rows: own } = await t.app.db.asUser({ tenantId: 'acme', userId: 'bob' }).query('SELECT pair_id FROM verified_pairs');
    expect(own.map((r: any) => r.pair_id)).toContain(pair.pair_id);
    // Writing is the admins' (and the author's): another user of the tenant changes nothing.
    const { rowCount } = await t.app.db
      .asUser({ tenantId: 'acme', userId: 'bob' })
      .query(`UPDATE verified_pairs SET sql_query = 'SELECT 1' WHERE pair_id = $1`, [pair.pair_id]);
    expect(rowCount).toBe(0);
  });

  it('when the caller is no admin of the tenant, then promoting, listing and editing are refused, and another tenant sees none of its pairs', async () => {
    const user = t.token('alice', { tenant: 'acme' });
    expect((await t.request('GET', '/admin/verified-pairs', { token: user })).status).toBe(403);
    expect(
      (
        await t.request('POST', '/admin/verified-pairs', {
          token: user,
          body: { user_id: 'alice', session_id: crypto.randomUUID(), turn_number: 1 },
        })
      ).status,
    ).toBe(403);
    const otherAdmin = t.token('globex-admin', { tenant: 'globex', roles: ['memory-admin'] });
    expect((await t.request('GET', '/admin/verified-pairs', { token: otherAdmin })).body.verified_pairs).toEqual([]);
    const { pair } = await promoted('alice2');
    expect(
      (await t.request('PATCH', `/admin/verified-pairs/${pair.pair_id}`, { token: otherAdmin, body: { sql_query: 'SELECT 1' } })).status,
    ).toBe(404);
    // A turn that is not there is a 404, a bad body a 400.
    const missing = await t.request('POST', '/admin/verified-pairs', {
      token: admin,
      body: { user_id: 'alice', session_id: crypto.randomUUID(), turn_number: 1 },
    });
    expect(missing.status).toBe(404);
    expect((await t.request('PATCH', `/admin/verified-pairs/${pair.pair_id}`, { token: admin, body: {} })).status).toBe(400);
  });

  it('when an admin corrects the SQL and later retires the pair, then the next memory carries the corrected SQL and then no pair, and each action is audited', async () => {
    const { pair } = await promoted('dora', 'How many orders were shipped to Lisbon in March?');
    const fixed = "SELECT COUNT(*) FROM salesdb.orders WHERE city = 'Lisbon' AND month = 3 AND shipped";
    // The test clock stands still unless moved: each action a second later, so the audit's order is certain.
    t.clock.advance(1000);
    const edited = await t.request('PATCH', `/admin/verified-pairs/${pair.pair_id}`, {
      token: admin,
      body: { sql_query: fixed, tables_used: ['salesdb.orders'] },
    });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({
      sql_query: fixed,
      tables_used: ['salesdb.orders'],
      sql_edited_at: expect.any(String),
      question_edited_at: null,
    });

    const user = t.token('eve', { tenant: 'acme' });
    const after = await ask(user, { question: 'How many orders shipped to Lisbon in March?', vdp_database_names: 'salesdb' });
    expect(pairIdsIn(after.reply)).toContain(pair.pair_id);
    expect(after.upstream.custom_instructions).toContain(fixed);
    expect(after.reply.memory_context_used.use_views).toContain('salesdb.orders');

    t.clock.advance(1000);
    const retired = await t.request('POST', `/admin/verified-pairs/${pair.pair_id}/retire`, { token: admin });
    expect(retired.status).toBe(200);
    expect(retired.body.retired_at).toEqual(expect.any(String));
    const later = await ask(user, { question: 'How many orders shipped to Lisbon in March?', vdp_database_names: 'salesdb' });
    expect(pairIdsIn(later.reply)).not.toContain(pair.pair_id);
    const live = (await t.request('GET', '/admin/verified-pairs', { token: admin })).body.verified_pairs.map((p: any) => p.pair_id);
    expect(live).not.toContain(pair.pair_id);
    const all = (await t.request('GET', '/admin/verified-pairs?retired=true', { token: admin })).body.verified_pairs.map(
      (p: any) => p.pair_id,
    );
    expect(all).toContain(pair.pair_id);

    const audit = (await t.request('GET', '/admin/audit?user_id=dora', { token: admin })).body.entries;
    expect(audit.map((e: any) => [e.action, e.actor_user_id, e.target])).toEqual([
      ['pair_retire', 'acme-admin', pair.pair_id],
      ['pair_edit', 'acme-admin', pair.pair_id],
      ['pair_promote', 'acme-admin', pair.pair_id],
    ]);
  });

  it('when users rate down answers whose memory held a pair, then admins see the count, and a rating taken back is no longer counted', async () => {
    const { pair } = await promoted('fred', 'What was the average basket value in Porto last week?');
    const counted = async () =>
      (await t.request('GET', '/admin/verified-pairs', { token: admin })).body.verified_pairs.find((p: any) => p.pair_id === pair.pair_id)
        .negative_feedback;
    for (const user of ['gina', 'hank']) {
      const token = t.token(user, { tenant: 'acme' });
      const { reply } = await ask(token, { question: 'Average basket value in Porto last week?', vdp_database_names: 'salesdb' });
      expect(pairIdsIn(reply)).toContain(pair.pair_id);
      const rated = await t.request('POST', `/sessions/${reply.conversation_metadata.conversation_id}/turns/1/feedback`, {
        token,
        body: { rating: 'down' },
      });
      expect(rated.status).toBe(200);
      if (user === 'hank') {
        expect(await counted()).toBe(2);
        await t.request('POST', `/sessions/${reply.conversation_metadata.conversation_id}/turns/1/feedback`, {
          token,
          body: { rating: 'up' },
        });
      }
    }
    expect(await counted()).toBe(1);
  });

  it("when a pair's author is erased, then a pair no admin adopted is gone, and an adopted one stays without the author: no id, no question they wrote unless an admin rewrote it", async () => {
    const { pair: plain } = await promoted('ivan', 'Which stores opened in 2021?');
    const { pair: adopted } = await promoted('ivan', 'List the suppliers of frozen goods');
    const { pair: rewritten } = await promoted('ivan', 'Revenue of the Faro store by quarter');
    for (const p of [adopted, rewritten]) {
      expect((await t.request('POST', `/admin/verified-pairs/${p.pair_id}/adopt`, { token: admin })).body.adopted_at).toEqual(
        expect.any(String),
      );
    }
    const ownWords = 'Quarterly revenue of the store in Faro';
    expect(
      (await t.request('PATCH', `/admin/verified-pairs/${rewritten.pair_id}`, { token: admin, body: { question: ownWords } })).body
        .question,
    ).toBe(ownWords);

    // Ivan's export lists the pairs that came from him.
    const ivan = t.token('ivan', { tenant: 'acme' });
    const exported = await t.request('POST', '/me/export', { token: ivan });
    expect(exported.status).toBe(202);
    expect((await gdprRequestFinished(t, exported.body.request_id, { token: ivan })).status).toBe('completed');
    const doc = (await t.request('GET', `/gdpr/requests/${exported.body.request_id}/download`, { token: ivan })).body;
    expect(doc.verified_pairs.map((p: any) => p.pair_id).sort()).toEqual([plain.pair_id, adopted.pair_id, rewritten.pair_id].sort());
    expect(doc.verified_pairs.every((p: any) => p.author_user_id === 'ivan')).toBe(true);

    const erased = await t.request('DELETE', '/admin/users/ivan', { token: admin });
    expect(erased.status).toBe(202);
    const done = await gdprRequestFinished(t, erased.headers.get('location')!, { token: admin });
    expect(done.status).toBe('completed');
    expect(done.counts).toMatchObject({ verified_pairs: 3 });

    const { rows } = await t.admin.query(
      `SELECT pair_id, author_user_id, question, source_session_id, embedding IS NULL AS no_vector
       FROM verified_pairs WHERE pair_id = ANY($1::uuid[]) ORDER BY pair_id`,
      [[plain.pair_id, adopted.pair_id, rewritten.pair_id]],
    );
    expect(rows.map((r) => r.pair_id).sort()).toEqual([adopted.pair_id, rewritten.pair_id].sort());
    expect(rows.find((r) => r.pair_id === adopted.pair_id)).toMatchObject({
      author_user_id: null,
      question: null,
      source_session_id: null,
      no_vector: true,
    });
    expect(rows.find((r) => r.pair_id === rewritten.pair_id)).toMatchObject({ author_user_id: null, question: ownWords, no_vector: false });
    // Nothing of ivan's is left in the table: not his id, not the questions he wrote.
    const { rows: traces } = await t.admin.query(
      `SELECT count(*)::int AS n FROM verified_pairs WHERE row_to_json(verified_pairs)::text ~ $1`,
      ['ivan|Which stores opened|suppliers of frozen goods|Faro store by quarter'],
    );
    expect(traces[0].n).toBe(0);

    // The pair with the admin's question is still recalled; the one without a question waits for one.
    const { reply } = await ask(t.token('judy', { tenant: 'acme' }), {
      question: 'Quarterly revenue of the Faro store?',
      vdp_database_names: 'salesdb',
    });
    expect(pairIdsIn(reply)).toContain(rewritten.pair_id);
    expect(pairIdsIn(reply)).not.toContain(adopted.pair_id);
    const listed = (await t.request('GET', '/admin/verified-pairs', { token: admin })).body.verified_pairs.find(
      (p: any) => p.pair_id === adopted.pair_id,
    );
    expect(listed).toMatchObject({ author_user_id: null, question: null, source: null });
  });

  it('when the tenant turns on pairs from positive feedback, then a turn rated up whose SQL ran becomes a pair; where it is off, nothing does', async () => {
    const other = t.token('kim', { tenant: 'initech' });
    const offReply = (await ask(other, { question: 'Sales per region for 2023', vdp_database_names: 'salesdb' })).reply;
    await t.request('POST', `/sessions/${offReply.conversation_metadata.conversation_id}/turns/1/feedback`, {
      token: other,
      body: { rating: 'up' },
    });
    const initechAdmin = t.token('initech-admin', { tenant: 'initech', roles: ['memory-admin'] });
    expect((await t.request('GET', '/admin/verified-pairs', { token: initechAdmin })).body.verified_pairs).toEqual([]);
    expect((await t.request('GET', '/admin/settings', { token: initechAdmin })).body).toEqual({ pairs_from_positive_feedback: false });

    const turnedOn = await t.request('PUT', '/admin/settings', { token: initechAdmin, body: { pairs_from_positive_feedback: true } });
    expect(turnedOn.body).toEqual({ pairs_from_positive_feedback: true });
    expect((await t.request('PUT', '/admin/settings', { token: other, body: { pairs_from_positive_feedback: false } })).status).toBe(403);
    const onReply = (await ask(other, { question: 'Sales per region for 2022', vdp_database_names: 'salesdb' })).reply;
    await t.request('POST', `/sessions/${onReply.conversation_metadata.conversation_id}/turns/1/feedback`, {
      token: other,
      body: { rating: 'up' },
    });
    const pairs = (await t.request('GET', '/admin/verified-pairs', { token: initechAdmin })).body.verified_pairs;
    expect(pairs).toMatchObject([{ question: 'Sales per region for 2022', promoted_via: 'feedback', author_user_id: 'kim' }]);
    // Acme's setting is its own: still off.
    expect((await t.request('GET', '/admin/settings', { token: admin })).body).toEqual({ pairs_from_positive_feedback: false });
  });
});
