import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

describe('per-turn accounting and tags', () => {
  let upstream: FakeUpstream;
  let t: TestApp;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  const chat = (sub: string, body: Record<string, unknown>) => t.request('POST', '/memoryChat', { token: t.token(sub), body });

  it("when /memoryChat stores a turn, then the answerer's tokens and the times spent are stored with it and shown", async () => {
    const reply = await chat('counter', { question: 'Total sales by region for 2024', vdp_tag_names: 'finance, sales' });
    const sessionId = reply.body.conversation_metadata.conversation_id;
    const detail = await t.request('GET', `/sessions/${sessionId}`, { token: t.token('counter') });
    const turn = detail.body.turns[0];
    expect(turn.vdp_tag_names).toEqual(['finance', 'sales']);
    expect(turn.accounting.tokens).toEqual(salesReply('2024').tokens);
    for (const field of ['memory_retrieval_ms', 'answerer_ms', 'total_ms'] as const) expect(turn.accounting[field]).toBeTypeOf('number');
    expect(turn.accounting.total_ms).toBeGreaterThanOrEqual(turn.accounting.answerer_ms);
    expect(turn.accounting.total_ms).toBeGreaterThanOrEqual(turn.accounting.memory_retrieval_ms);

    const { rows } = await t.admin.query(`SELECT to_jsonb(t) - 'embedding' AS turn FROM turns t WHERE session_id = $1`, [sessionId]);
    expect(rows[0].turn).toMatchObject({ tokens: salesReply('2024').tokens, vdp_tag_names: ['finance', 'sales'] });
  });

  it('when a turn is stored through the turns API, then it has no answerer times', async () => {
    const stored = await t.request('POST', '/sessions/turns', {
      token: t.token('counter'),
      body: { question: 'How many users?', answer: '3', vdp_tag_names: ['crm'] },
    });
    const detail = await t.request('GET', `/sessions/${stored.body.session.session_id}`, { token: t.token('counter') });
    expect(detail.body.turns[0]).toMatchObject({
      vdp_tag_names: ['crm'],
      accounting: { tokens: null, memory_retrieval_ms: null, answerer_ms: null, total_ms: null },
    });
  });

  it('when a request names tags, then only turns recorded within those tags are used as memory', async () => {
    await chat('tagger', { question: 'Total loans per branch in the retail bank', vdp_tag_names: 'retail' });
    await chat('tagger', { question: 'Total loans per branch in the private bank', vdp_tag_names: ['private'] });
    await chat('tagger', { question: 'Total loans per branch untagged' });
    const reply = await chat('tagger', { question: 'Total loans per branch', vdp_tag_names: 'retail' });
    const sent = String(upstream.lastBody().custom_instructions);
    expect(sent).toContain('retail bank');
    expect(sent).not.toContain('private bank');
    expect(sent).not.toContain('untagged');
    expect(reply.body.memory_context_used.similar_queries_count).toBe(1);
    expect(upstream.lastBody().vdp_tag_names).toBe('retail');

    const search = await t.request('POST', '/memory/search', {
      token: t.token('tagger'),
      body: { query: 'Total loans per branch', k: 10, vdp_tag_names: ['retail'] },
    });
    expect(search.status).toBe(200);
    expect(search.body.results.map((r: { question: string }) => r.question).sort()).toEqual([
      'Total loans per branch',
      'Total loans per branch in the retail bank',
    ]);
  });
});
