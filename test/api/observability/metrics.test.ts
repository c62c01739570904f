import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../support/service/service-with-upstream.js';
import type { TestApp } from '../../support/service/test-app.js';

function sample(text: string, name: string, labels = ''): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `) || (labels === '' && l.startsWith(`${name} `)));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('GET /metrics', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  async function scrape(): Promise<string> {
    const res = await fetch(`${t.baseUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    return res.text();
  }

  it('when /memoryChat answers a follow-up, then the memory, upstream and HTTP metrics move', async () => {
    const before = await scrape();
    const token = t.token('metered');
    const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Show me total sales by region for 2024' } });
    await t.request('POST', '/memoryChat', {
      token,
      body: { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id },
    });
    const after = await scrape();

    expect(
      sample(after, 'memorychat_memory_requests_total', 'hit="true"') - sample(before, 'memorychat_memory_requests_total', 'hit="true"'),
    ).toBe(1);
    expect(
      sample(after, 'memorychat_memory_requests_total', 'hit="false"') - sample(before, 'memorychat_memory_requests_total', 'hit="false"'),
    ).toBe(1);
    expect(sample(after, 'memorychat_memory_retrieval_seconds_count') - sample(before, 'memorychat_memory_retrieval_seconds_count')).toBe(
      2,
    );
    expect(sample(after, 'memorychat_context_tokens_sum')).toBeGreaterThan(sample(before, 'memorychat_context_tokens_sum'));
    expect(sample(after, 'memorychat_upstream_request_duration_seconds_count', 'outcome="ok"')).toBe(2);
    expect(sample(after, 'memorychat_embedding_duration_seconds_count', 'model="local-hash-v2@384"')).toBeGreaterThanOrEqual(3);
    expect(after).toMatch(/memorychat_http_request_duration_seconds_count\{method="POST",route="\/memoryChat",status_code="200"\} 2/);
    expect(after).toMatch(/memorychat_db_pool_connections\{state="total"\} 1/);
  });

  it('when the upstream fails, then the error counter names the problem code', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(500).end('{}');
    });
    await t.request('POST', '/memoryChat', { token: t.token('metered'), body: { question: 'sales?' } });
    expect(sample(await scrape(), 'memorychat_upstream_errors_total', 'code="upstream-failed"')).toBe(1);
  });
});
