import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_EVERY_MS } from '../../../../services/core/backlog-metrics.js';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { alertRules, dashboardQueries, exportedSeriesNames, metricNamesIn } from '../../../support/monitoring.js';
import { gdprRequestFinished } from '../../../support/service/gdpr-requests.js';
import { seedSession } from '../../../support/service/seed-memory.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

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
    // Store growth and conversation length: the two turns made a session of 1, then of 2 turns.
    expect(
      sample(after, 'memorychat_turns_stored_total', 'status="ok"') - sample(before, 'memorychat_turns_stored_total', 'status="ok"'),
    ).toBe(2);
    expect(sample(after, 'memorychat_conversation_turns_count') - sample(before, 'memorychat_conversation_turns_count')).toBe(2);
    expect(sample(after, 'memorychat_conversation_turns_sum') - sample(before, 'memorychat_conversation_turns_sum')).toBe(3);
  });

  it('when GDPR requests wait and an erasure runs, then the backlog gauges show them and the erased turns count as deleted', async () => {
    // Recorded three hours ago and never run, as a request whose job was lost.
    await t.admin.query(
      `INSERT INTO gdpr_audit (tenant_id, request_id, action, actor_user_id, subject_user_id, status, requested_at)
       VALUES ('default', gen_random_uuid(), 'erase', 'stuck', 'stuck', 'queued', $1)`,
      [new Date(t.clock.now.getTime() - 3 * 3_600_000)],
    );
    // A scrape reuses the last reading until the clock moved on by SAMPLE_EVERY_MS.
    t.clock.advance(SAMPLE_EVERY_MS);
    const waiting = await scrape();
    expect(sample(waiting, 'memorychat_gdpr_unfinished_requests', 'action="erase"')).toBe(1);
    expect(sample(waiting, 'memorychat_gdpr_unfinished_requests', 'action="export"')).toBe(0);
    expect(sample(waiting, 'memorychat_gdpr_oldest_unfinished_request_age_seconds', 'action="erase"')).toBe(
      3 * 3600 + SAMPLE_EVERY_MS / 1000,
    );
    expect(sample(waiting, 'memorychat_queue_held_jobs')).toBe(0);
    expect(waiting).toMatch(/^memorychat_queue_jobs\{state="waiting"\} \d+$/m);

    await seedSession(t.admin, { userId: 'erased', turns: 3, expiresAt: new Date(t.clock.now.getTime() + 3_600_000) });
    const token = t.token('erased');
    const erase = await t.request('DELETE', '/me', { token });
    expect((await gdprRequestFinished(t, erase.body.request_id, { token })).status).toBe('completed');
    const erased = await scrape();
    expect(sample(erased, 'memorychat_turns_deleted_total', 'reason="erasure"')).toBe(3);
    expect(sample(erased, 'memorychat_jobs_total', 'kind="gdpr-erase",outcome="completed"')).toBe(1);
    expect(sample(erased, 'memorychat_jobs_total', 'kind="gdpr-erase",outcome="failed"')).toBe(0);
  });

  it('when an alert rule or a dashboard panel names a metric, then the service exports it (k8s/monitoring)', async () => {
    const exported = exportedSeriesNames(await scrape());
    const { panels, variableMetrics } = dashboardQueries();
    const named = [
      ...alertRules().map((a) => ({ where: `alert ${a.alert}`, names: metricNamesIn(a.expr) })),
      ...panels.map((q) => ({ where: `panel ${q.panel}`, names: metricNamesIn(q.expr) })),
      { where: 'the namespace variable', names: variableMetrics },
    ];
    for (const { where, names } of named) {
      expect([where, names.length > 0]).toEqual([where, true]);
      expect([where, names.filter((n) => !exported.has(n))]).toEqual([where, []]);
    }
    // The check sees what it should: names are found where they are, and a histogram is no series of its own.
    expect(metricNamesIn('sum by (le) (rate(a_bucket{x="y"}[5m])) / on (z) b offset 1h > 0.1')).toEqual(['a_bucket', 'b']);
    expect(exported.has('memorychat_memory_retrieval_seconds_bucket')).toBe(true);
    expect(exported.has('memorychat_memory_retrieval_seconds')).toBe(false);
  });

  it('when the upstream fails, then the error counter names the problem code', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(500).end('{}');
    });
    await t.request('POST', '/memoryChat', { token: t.token('metered'), body: { question: 'sales?' } });
    expect(sample(await scrape(), 'memorychat_upstream_errors_total', 'code="upstream-failed"')).toBe(1);
  });
});
