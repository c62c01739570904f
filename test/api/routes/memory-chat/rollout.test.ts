import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rolloutBucket } from '../../../../services/core/chat/rollout.js';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

/** The first user id of this prefix whose bucket is inside (or outside) a 50% rollout. */
function userWhere(prefix: string, inside: boolean): string {
  for (let i = 0; ; i++) {
    const userId = `${prefix}-${i}`;
    if (rolloutBucket({ tenantId: 'default', userId }) < 50 === inside) return userId;
  }
}

describe('memory rollout on /memoryChat (MEMORY_ROLLOUT_PERCENT=50, globex at 0%)', () => {
  let t: TestApp;
  let upstream: FakeUpstream;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({ MEMORY_ROLLOUT_PERCENT: '50', MEMORY_ROLLOUT_TENANTS: 'globex=0' }));
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

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
    const service = await startServiceWithUpstream({ MEMORY_ENABLED: 'false' });
    const { t } = service;
    try {
      const res = await t.request('POST', '/memoryChat', { token: t.token('anyone'), body: { question: 'Sales for 2024' } });
      expect(res.body.memory_context_used).toMatchObject({ applied: false, reason: 'memory_disabled' });
      expect(res.body.conversation_metadata.message_count).toBe(1);
    } finally {
      await stopServiceWithUpstream(service);
    }
  });
});

describe('turns outside the rollout not stored (MEMORY_ROLLOUT_PERCENT=50, MEMORY_STORE_OUTSIDE_ROLLOUT=false)', () => {
  let t: TestApp;
  let upstream: FakeUpstream;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({ MEMORY_ROLLOUT_PERCENT: '50', MEMORY_STORE_OUTSIDE_ROLLOUT: 'false' }));
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  it('when a user is outside the rollout, then the question is proxied as asked and nothing of theirs is stored', async () => {
    const token = t.token(userWhere('proxied', false));
    const asked = await t.request('POST', '/memoryChat', {
      token,
      body: { question: 'Show me total sales by region for 2024', session_key: 'slack:C1:1700000000.1' },
    });
    expect(asked.status).toBe(200);
    expect(asked.body.conversation_metadata).toBeNull();
    expect(asked.body.memory_context_used).toMatchObject({ applied: false, reason: 'outside_rollout', history_messages_count: 0 });
    expect(upstream.lastBody().question).toBe('Show me total sales by region for 2024');

    // A memory command has no memory to answer from: it goes to the answerer like any question.
    const command = await t.request('POST', '/memoryChat', { token, body: { question: 'show me the SQL' } });
    expect(command.body.memory_command).toBeUndefined();
    expect(upstream.lastBody().question).toBe('show me the SQL');

    const sessions = await t.request('GET', '/sessions', { token });
    expect(sessions.body.sessions).toEqual([]);
    const { rows } = await t.admin.query('SELECT count(*)::int AS n FROM turns WHERE user_id = $1', [userWhere('proxied', false)]);
    expect(rows[0].n).toBe(0);
  });

  it('when such a request carries an Idempotency-Key, then a retry replays the reply without asking again', async () => {
    const token = t.token(userWhere('proxied', false));
    const send = () =>
      t.request('POST', '/memoryChat', {
        token,
        headers: { 'idempotency-key': 'outside-rollout-1' },
        body: { question: 'Revenue by product for 2023' },
      });
    const calls = upstream.requests.length;
    const first = await send();
    const retry = await send();
    expect([first.status, retry.status]).toEqual([200, 200]);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect(upstream.requests.length - calls).toBe(1);
  });

  it('when a user is inside the rollout, then their turns are stored and used as before', async () => {
    const token = t.token(userWhere('kept', true));
    const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Show me total sales by region for 2024' } });
    const second = await t.request('POST', '/memoryChat', {
      token,
      body: { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id },
    });
    expect(second.body.memory_context_used).toMatchObject({ applied: true, history_messages_count: 1 });
    expect(second.body.conversation_metadata.message_count).toBe(2);
  });
});
