import type { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Config, loadConfig } from '../../services/config/config.js';
import { summarizationSettingsFrom, summarizeSession } from '../../services/core/jobs/summarization.js';
import { countTokens } from '../../services/core/text.js';
import { BullJobQueue } from '../../services/infra/queue/bull-queue.js';
import { createAnthropicChat } from '../../services/providers/llm/anthropic-chat.js';
import { deleteKeysUnder, redisClient, uniquePrefix, waitFor } from '../support/databases/redis.js';
import { startFakeAnthropic, startFakeOpenAI } from '../support/fakes/fake-llm.js';
import { type FakeUpstream, startFakeUpstream } from '../support/fakes/fake-upstream.js';
import { seedSession } from '../support/service/seed-memory.js';
import { startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/service/test-app.js';
import { silentLog, startTestWorker, summarizingAppSettings } from '../support/service/test-worker.js';

const HOUR = 3_600_000;

describe('summarization job through /memoryChat (BullMQ, OpenAI SDK)', () => {
  const redis = redisClient();
  const prefix = uniquePrefix('summary');
  let upstream: FakeUpstream;
  let llm: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let failing = false;
  let summaries = 0;
  let t: TestApp;
  let worker: Worker;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    llm = await startFakeOpenAI(() =>
      failing
        ? { status: 500, body: { error: { message: 'overloaded', type: 'server_error' } } }
        : `SUMMARY-${++summaries}: sales by region, years 2020-2024`,
    );
    t = await startTestApp({
      ...summarizingAppSettings({ answerUrl: upstream.answerUrl, llmBaseURL: llm.baseURL, queuePrefix: prefix }),
      JOB_ATTEMPTS: '2',
      JOB_BACKOFF_MS: '20',
    });
    worker = startTestWorker({ config: t.config, db: t.database.scoped, queue: t.app.queue, clock: () => t.clock.now });
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    await upstream?.close();
    await llm?.close();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
  });

  async function ask(question: string, sessionId?: string, user = 'analyst') {
    const res = await t.request('POST', '/memoryChat', {
      token: t.token(user),
      body: { question, ...(sessionId ? { session_id: sessionId } : {}) },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }
  async function summaryOf(sessionId: string) {
    const { rows } = await t.admin.query('SELECT summary_text, summary_through_turn FROM sessions WHERE session_id = $1', [sessionId]);
    return rows[0] as { summary_text: string | null; summary_through_turn: number | null };
  }

  it('when a session passes the threshold, then its older turns are folded into a summary that later context uses, incrementally', async () => {
    const first = await ask('Total sales by region for 2020');
    const id = first.conversation_metadata.conversation_id;
    await ask('What about 2021?', id);
    await ask('What about 2022?', id);
    expect((await summaryOf(id)).summary_through_turn).toBeNull();
    await ask('What about 2023?', id); // 4 turns: due; the 2 newest stay verbatim

    await waitFor(async () => (await summaryOf(id)).summary_through_turn === 2, 20_000, 'first summary');
    const call = llm.requests.at(-1)!.body;
    expect(call.model).toBe('gpt-summary-test');
    const prompt = call.messages.at(-1).content as string;
    expect(prompt).toContain('Total sales by region for 2020');
    expect(prompt).toContain('What about 2021?');
    expect(prompt).not.toContain('What about 2022?');

    const fifth = await ask('And 2024?', id);
    expect(fifth.conversation_metadata.is_summarized).toBe(true);
    expect(upstream.lastBody().custom_instructions).toContain('Summary of earlier turns:\n    SUMMARY-1');

    await ask('What about 2025?', id); // turn 6: 4 turns past the summary, so due again
    await waitFor(async () => (await summaryOf(id)).summary_through_turn === 4, 20_000, 'second summary');
    const incremental = llm.requests.at(-1)!.body.messages.at(-1).content as string;
    expect(incremental).toContain('Summary so far:\nSUMMARY-1');
    expect(incremental).toContain('What about 2022?');
    expect(incremental).toContain('What about 2023?');
    expect(incremental).not.toContain('Total sales by region for 2020');
    expect(incremental).not.toContain('And 2024?');
    expect((await summaryOf(id)).summary_text).toBe('SUMMARY-2: sales by region, years 2020-2024');
  });

  it('when the summary LLM keeps failing, then the job retries, lands in the failed set, and admins of its tenant see it (in the list and the counts), admins of another tenant do not', async () => {
    failing = true;
    try {
      const callsBefore = llm.requests.length;
      const first = await ask('Revenue by product for 2020', undefined, 'unlucky');
      const id = first.conversation_metadata.conversation_id;
      for (const year of [2021, 2022, 2023]) await ask(`What about ${year}?`, id, 'unlucky');
      const admin = t.token('ops', { roles: ['memory-admin'] });
      const failed = await waitFor(
        async () => {
          const res = await t.request('GET', '/admin/jobs/failed', { token: admin });
          return res.body.jobs.find((j: any) => j.kind === 'summarize' && j.data.sessionId === id);
        },
        30_000,
        'failed summarization',
      );
      expect(failed).toMatchObject({ attempts_made: 2, data: { tenantId: 'default', userId: 'unlucky', sessionId: id } });
      expect(failed.failed_reason).toMatch(/500|overloaded/);
      // Two job attempts, each with the SDK's own single retry.
      expect(llm.requests.length - callsBefore).toBe(4);
      const jobs = await t.request('GET', '/admin/jobs', { token: admin });
      expect(jobs.body.mode).toBe('bullmq');
      expect(jobs.body.counts.failed).toBeGreaterThanOrEqual(1);
      expect((await summaryOf(id)).summary_through_turn).toBeNull();
      const elsewhere = t.token('ops', { roles: ['memory-admin'], tenant: 'elsewhere' });
      expect((await t.request('GET', '/admin/jobs/failed', { token: elsewhere })).body.jobs.some((j: any) => j.data.sessionId === id)).toBe(
        false,
      );
      // Nor do the counts of another tenant's admin include this tenant's jobs: its only jobs are the system's.
      const elsewhereCounts = (await t.request('GET', '/admin/jobs', { token: elsewhere })).body.counts;
      expect(elsewhereCounts.failed).toBe(0);
    } finally {
      failing = false;
    }
  });

  it('when a session is enqueued twice before a worker takes it, then one summarization job waits', async () => {
    const idle = new BullJobQueue({ ...(t.config as Config & { REDIS_URL: string }), QUEUE_PREFIX: `${prefix}-idle` });
    try {
      const data = { tenantId: 'default', userId: 'u', sessionId: crypto.randomUUID() };
      await idle.enqueue('summarize', data);
      await idle.enqueue('summarize', data);
      await idle.enqueue('summarize', { ...data, sessionId: crypto.randomUUID() });
      expect((await idle.counts()).waiting).toBe(2);
    } finally {
      await idle.queue.obliterate({ force: true });
      await idle.close();
      await deleteKeysUnder(redis, `${prefix}-idle`);
    }
  });
});

describe('summarizeSession (core)', () => {
  let t: TestApp;
  let anthropic: Awaited<ReturnType<typeof startFakeAnthropic>>;
  beforeAll(async () => {
    anthropic = await startFakeAnthropic(() => 'ANTHROPIC-SUMMARY');
    t = await startTestApp({});
  });
  afterAll(async () => {
    await t?.close();
    await anthropic?.close();
  });

  const settings = (env: Record<string, string>) => summarizationSettingsFrom(loadConfig({ JWT_SECRET: TEST_JWT_SECRET, ...env }));

  it('when many turns wait, then they are folded in chunks through the Anthropic SDK and no call exceeds its token budget', async () => {
    const sessionId = await seedSession(t.admin, { userId: 'chunky', turns: 120, expiresAt: new Date(Date.now() + HOUR) });
    const s = settings({ SUMMARY_MAX_INPUT_TOKENS: '1500', SUMMARY_MAX_TOKENS: '600' });
    const llm = createAnthropicChat({ apiKey: 'test', baseURL: anthropic.baseURL, model: 'claude-test', timeoutMs: 5000 });
    const result = await summarizeSession(
      { db: t.database.scoped, llm, clock: () => new Date(), log: silentLog, settings: s },
      { tenantId: 'default', userId: 'chunky', sessionId },
    );
    expect(result).toMatchObject({ outcome: 'summarized', throughTurn: 110 });
    expect(result.llmCalls).toBeGreaterThan(1);
    expect(anthropic.requests).toHaveLength(result.llmCalls);
    for (const { body } of anthropic.requests) {
      expect(countTokens(body.system) + countTokens(body.messages[0].content)).toBeLessThanOrEqual(1500);
      expect(body.max_tokens).toBe(600);
    }
    expect(anthropic.requests.at(-1)!.body.messages[0].content).toContain('Summary so far:\nANTHROPIC-SUMMARY');
    expect(anthropic.requests.map((r) => r.body.messages[0].content).join('\n')).toContain('Turn 110.');
  });

  it('when no summary LLM is configured, then an extractive summary lists the questions and skips empty and failed turns', async () => {
    const sessionId = await seedSession(t.admin, { userId: 'plain', turns: 16, expiresAt: new Date(Date.now() + HOUR) });
    await t.admin.query(`UPDATE turns SET status = 'upstream_error' WHERE session_id = $1 AND turn_number = 2`, [sessionId]);
    await t.admin.query(`UPDATE turns SET question = ' ', answer = '' WHERE session_id = $1 AND turn_number = 3`, [sessionId]);
    const deps = { db: t.database.scoped, clock: () => new Date(), log: silentLog, settings: settings({}) };
    const key = { tenantId: 'default', userId: 'plain', sessionId };
    expect(await summarizeSession(deps, key)).toMatchObject({ outcome: 'summarized', throughTurn: 6, llmCalls: 0 });
    const { rows } = await t.admin.query('SELECT summary_text FROM sessions WHERE session_id = $1', [sessionId]);
    const lines = (rows[0].summary_text as string).split('\n');
    expect(lines).toHaveLength(4); // turns 1, 4, 5, 6
    expect(lines[0]).toMatch(/^- Question 1 from plain .*\[tables: sales\] SQL: SELECT/);
    expect(await summarizeSession(deps, key)).toMatchObject({ outcome: 'up-to-date', throughTurn: 6 });
  });

  it('when the conversation is forgotten while its first summary is being written, then the summary is not saved', async () => {
    const sessionId = await seedSession(t.admin, { userId: 'forgets-mid-summary', turns: 16, expiresAt: new Date(Date.now() + HOUR) });
    const anthropicLlm = createAnthropicChat({ apiKey: 'test', baseURL: anthropic.baseURL, model: 'claude-test', timeoutMs: 5000 });
    // The user's /clear lands after the model has answered and before the summary is saved.
    const llm = {
      ...anthropicLlm,
      complete: async (request: Parameters<typeof anthropicLlm.complete>[0]) => {
        const answered = await anthropicLlm.complete(request);
        const cleared = await t.request('POST', `/sessions/${sessionId}/clear`, { token: t.token('forgets-mid-summary') });
        expect(cleared.status).toBe(200);
        return answered;
      },
    };
    const result = await summarizeSession(
      { db: t.database.scoped, llm, clock: () => new Date(), log: silentLog, settings: settings({}) },
      { tenantId: 'default', userId: 'forgets-mid-summary', sessionId },
    );
    expect(result).toMatchObject({ outcome: 'superseded', throughTurn: null, llmCalls: 1 });
    const { rows } = await t.admin.query('SELECT summary_text, summary_through_turn FROM sessions WHERE session_id = $1', [sessionId]);
    expect(rows[0]).toEqual({ summary_text: null, summary_through_turn: null });
  });

  it('when a turn was rated down, then the summary keeps its question but not its SQL', async () => {
    const sessionId = await seedSession(t.admin, { userId: 'rated-down', turns: 16, expiresAt: new Date(Date.now() + HOUR) });
    await t.admin.query(`UPDATE turns SET feedback_rating = 'down' WHERE session_id = $1 AND turn_number = 2`, [sessionId]);
    const deps = { db: t.database.scoped, clock: () => new Date(), log: silentLog, settings: settings({}) };
    await summarizeSession(deps, { tenantId: 'default', userId: 'rated-down', sessionId });
    const { rows } = await t.admin.query('SELECT summary_text FROM sessions WHERE session_id = $1', [sessionId]);
    const lines = (rows[0].summary_text as string).split('\n');
    expect(lines[0]).toMatch(/^- Question 1 from rated-down .*SQL: SELECT/);
    expect(lines[1]).toMatch(/^- Question 2 from rated-down/);
    expect(lines[1]).not.toContain('SQL:');
  });
});
