import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolloutBucket } from '../../services/core/memory/rollout.js';
import { startFakeUpstream } from '../support/fake-upstream.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** The first user id of this prefix whose bucket is inside (or outside) a 50% rollout. */
function userWhere(prefix: string, inside: boolean): string {
  for (let i = 0; ; i++) {
    const userId = `${prefix}-${i}`;
    if (rolloutBucket({ tenantId: 'default', userId }) < 50 === inside) return userId;
  }
}

describe('memory rollout on /memoryChat (MEMORY_ROLLOUT_PERCENT=50, globex at 0%)', () => {
  let t: TestApp;
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    t = await startTestApp({ ANSWER_URL: upstream.answerUrl, MEMORY_ROLLOUT_PERCENT: '50', MEMORY_ROLLOUT_TENANTS: 'globex=0' });
  });
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
  });

  async function conversation(token: string) {
    const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Show me total sales by region for 2024' } });
    const session_id = first.body.conversation_metadata.conversation_id;
    const second = await t.request('POST', '/memoryChat', { token, body: { question: 'What about 2023?', session_id } });
    expect([first.status, second.status]).toEqual([200, 200]);
    return { first: first.body, second: second.body, sent: upstream.lastBody() };
  }

  it('when a user is inside the rollout, then the follow-up is answered with memory and says so', async () => {
    const { first, second, sent } = await conversation(t.token(userWhere('inside', true)));
    expect(first.memory_context_used).toMatchObject({ applied: true, reason: 'applied' });
    expect(second.memory_context_used).toMatchObject({ applied: true, reason: 'applied', history_messages_count: 1 });
    expect(sent.custom_instructions).toContain('Show me total sales by region for 2024');
  });

  it('when a user is outside the rollout, then memory is not used but the turns are still stored', async () => {
    const { second, sent } = await conversation(t.token(userWhere('outside', false)));
    expect(second.memory_context_used).toMatchObject({ applied: false, reason: 'outside_rollout', history_messages_count: 0 });
    expect(sent.custom_instructions).toBeUndefined();
    expect(second.conversation_metadata.message_count).toBe(2);
  });

  it('when the tenant is overridden to 0%, then even an inside bucket gets no memory', async () => {
    const { second } = await conversation(t.token(userWhere('inside', true), { tenant: 'globex' }));
    expect(second.memory_context_used).toMatchObject({ applied: false, reason: 'outside_rollout' });
  });

  it('when the request declines memory, then the reason says so, and the metrics count every reason', async () => {
    const token = t.token(userWhere('inside', true));
    const res = await t.request('POST', '/memoryChat', { token, body: { question: 'Sales for 2022', use_memory: false } });
    expect(res.body.memory_context_used).toMatchObject({ applied: false, reason: 'use_memory_false' });

    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).toContain('memorychat_memory_applied_total{applied="true",reason="applied"} 2');
    expect(metrics).toContain('memorychat_memory_applied_total{applied="false",reason="outside_rollout"} 4');
    expect(metrics).toContain('memorychat_memory_applied_total{applied="false",reason="use_memory_false"} 1');
  });
});

describe('memory switched off (MEMORY_ENABLED=false)', () => {
  it('when memory is disabled, then no request uses it and the reply says why', async () => {
    const upstream = await startFakeUpstream();
    const t = await startTestApp({ ANSWER_URL: upstream.answerUrl, MEMORY_ENABLED: 'false' });
    try {
      const res = await t.request('POST', '/memoryChat', { token: t.token('anyone'), body: { question: 'Sales for 2024' } });
      expect(res.body.memory_context_used).toMatchObject({ applied: false, reason: 'memory_disabled' });
      expect(res.body.conversation_metadata.message_count).toBe(1);
    } finally {
      await t.close();
      await upstream.close();
    }
  });
});
