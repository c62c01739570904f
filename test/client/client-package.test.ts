// The memorychat-client package as a user of it has it: imported by its name (the workspace link to
// packages/memorychat-client, whose exports point at the built dist/), against the running service,
// following the README's examples. And `npm pack` ships what the exports name.
import { execFileSync } from 'node:child_process';
import { createMemorychatClient, type MemorychatClient, type Reply } from 'memorychat-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../support/service/service-with-upstream.js';
import type { TestApp } from '../support/service/test-app.js';

describe('the memorychat-client package', () => {
  let upstream: FakeUpstream;
  let service: TestApp;
  let memorychat: MemorychatClient;

  beforeAll(async () => {
    ({ t: service, upstream } = await startServiceWithUpstream());
    memorychat = createMemorychatClient(service.baseUrl, service.token('reader-of-the-readme'));
  });

  afterAll(() => stopServiceWithUpstream({ t: service, upstream }));

  it('when imported by name, then it is the built package, not the sources', async () => {
    const resolved = import.meta.resolve('memorychat-client');
    expect(resolved).toMatch(/packages\/memorychat-client\/dist\/index\.js$/);
    expect(import.meta.resolve('memorychat-client/langchain')).toMatch(/dist\/langchain\/index\.js$/);
  });

  it('when a user asks, follows up, lists sessions without a limit and reads the SQL, then every reply is typed and right', async () => {
    const first = await memorychat.POST('/memoryChat', { body: { question: 'Show me total sales by region for 2024' } });
    expect(first.error).toBeUndefined();
    const sessionId = first.data!.conversation_metadata!.conversation_id;
    const followUp: Reply<'memoryChat'> | undefined = (
      await memorychat.POST('/memoryChat', { body: { question: 'What about 2023?', session_id: sessionId } })
    ).data;
    expect(followUp?.memory_context_used.history_messages_count).toBe(1);

    // No `limit`: the parameter with a default is optional in the document, so in the client too.
    const { data: page, response } = await memorychat.GET('/sessions');
    expect(response.status).toBe(200);
    expect(page?.sessions.map((s) => [s.session_id, s.message_count])).toEqual([[sessionId, 2]]);

    const { data: session } = await memorychat.GET('/sessions/{id}', { params: { path: { id: sessionId } } });
    expect(session?.turns.map((t) => t.question)).toEqual(['Show me total sales by region for 2024', 'What about 2023?']);
    const { data: sql } = await memorychat.GET('/sessions/{id}/turns/{ref}/sql', { params: { path: { id: sessionId, ref: 'last' } } });
    expect(sql).toMatchObject({ turn_number: 2, sql_query: expect.stringContaining('year = 2023') });
  });

  it('when a chat frontend uses its own thread id as session_key, then its messages share one session it can find by key', async () => {
    const frontend = createMemorychatClient(service.baseUrl, service.token('keyed-frontend'));
    await frontend.POST('/memoryChat', { body: { question: 'Total sales by region for 2024?', session_key: 'thread-42' } });
    const next = await frontend.POST('/memoryChat', { body: { question: 'And 2023?', session_key: 'thread-42' } });
    expect(next.data?.conversation_metadata?.message_count).toBe(2);

    const { data: found } = await frontend.GET('/sessions', { params: { query: { key: 'thread-42' } } });
    expect(found?.sessions.map((s) => s.session_id)).toEqual([next.data?.conversation_metadata?.conversation_id]);
  });

  it('when a chatbot runs its own LLM, then it gets the context in its format and stores the finished turn', async () => {
    const own = createMemorychatClient(service.baseUrl, service.token('own-llm-bot'));
    const started = await own.POST('/sessions/turns', {
      body: { question: 'Total sales by region for 2024?', answer: 'EMEA 100, AMER 200.', sql_query: 'SELECT 1' },
    });
    expect(started.response.status).toBe(201);
    const sessionId = started.data!.session.session_id;

    const { data: context } = await own.POST('/memory/context', {
      body: { question: 'And by product?', session_id: sessionId, format: 'openai', max_tokens: 2000 },
    });
    expect(context?.messages).toEqual([
      { role: 'user', content: 'Total sales by region for 2024?' },
      { role: 'assistant', content: 'EMEA 100, AMER 200.\n\nSQL used:\nSELECT 1' },
    ]);
    const stored = await own.POST('/sessions/{id}/turns', {
      params: { path: { id: sessionId } },
      body: { question: 'And by product?', answer: 'Bikes 120, helmets 80.' },
    });
    expect(stored.data?.session.message_count).toBe(2);
  });

  it('when a user exports their data, then the README’s polling loop ends with the download of their sessions', async () => {
    const user = createMemorychatClient(service.baseUrl, service.token('exporting-user'));
    await user.POST('/sessions/turns', { body: { question: 'Revenue in 2024?', answer: '1 M.' } });

    const { data: accepted, response } = await user.POST('/me/export');
    expect(response.status).toBe(202);
    const id = accepted!.request_id;
    let status = (await user.GET('/gdpr/requests/{id}', { params: { path: { id } } })).data;
    while (status && status.status !== 'completed' && status.status !== 'failed') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await user.GET('/gdpr/requests/{id}', { params: { path: { id } } })).data;
    }
    expect(status?.status).toBe('completed');
    const { data: exported } = await user.GET('/gdpr/requests/{id}/download', { params: { path: { id } } });
    expect(exported).toMatchObject({ format: 'memorychat-export/1', user_id: 'exporting-user', sessions: [expect.anything()] });
  });

  it('when a bot holds an API key, then it acts for each end user of its namespace, a user id beyond ASCII included', async () => {
    const admin = createMemorychatClient(service.baseUrl, service.token('bot-admin', { roles: ['memory-admin'] }));
    const { data: key, response } = await admin.POST('/admin/api-keys', {
      body: { name: 'slack-bot', act_for_users: true, user_namespace: 'slack:T1:' },
    });
    expect(response.status).toBe(201);
    for (const user of ['slack:T1:U024BE7LH', 'slack:T1:zoë']) {
      const bot = createMemorychatClient(service.baseUrl, { apiKey: key!.api_key, user });
      const asked = await bot.POST('/memoryChat', { body: { question: 'Show me total sales by region for 2024', session_key: 'C1-1700' } });
      expect(asked.error).toBeUndefined();
      const { data: own } = await bot.GET('/sessions', { params: { query: { key: 'C1-1700' } } });
      expect(own?.sessions.map((s) => s.session_id)).toEqual([asked.data?.conversation_metadata?.conversation_id]);
    }
    const outside = await createMemorychatClient(service.baseUrl, { apiKey: key!.api_key, user: 'U024BE7LH' }).GET('/sessions');
    expect(outside.error).toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('when the token is wrong, then `error` is the problem document', async () => {
    const result = await createMemorychatClient(service.baseUrl, 'not-a-jwt').GET('/sessions');
    expect(result.response.status).toBe(401);
    expect(result.error).toMatchObject({ status: 401, code: expect.any(String) });
  });

  it('when packed, then the tarball holds the built entry points and the README, and no sources', () => {
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts', '--workspace', 'memorychat-client'], { encoding: 'utf8' }),
    ) as [{ name: string; files: { path: string }[] }];
    const files = packed.files.map((f) => f.path).sort();
    expect(packed.name).toBe('memorychat-client');
    expect(files).toEqual(
      expect.arrayContaining(['README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/langchain/index.js']),
    );
    expect(files.filter((f) => f.startsWith('src/') || f.endsWith('.tsbuildinfo'))).toEqual([]);
  });
});
