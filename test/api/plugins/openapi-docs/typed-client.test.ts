import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
// The client package (memorychat-client, built, imported by name) against the real server over HTTP: if the spec and the
// routes disagree on a path, a body or a reply field, this file stops compiling or fails here.

import { createMemorychatClient } from 'memorychat-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

describe('the typed client', () => {
  let upstream: FakeUpstream;
  let service: TestApp;

  beforeAll(async () => {
    ({ t: service, upstream } = await startServiceWithUpstream());
  });

  afterAll(() => stopServiceWithUpstream({ t: service, upstream }));

  it('when a question and its follow-up go through POST /memoryChat, then the typed replies carry the session and the memory used', async () => {
    const client = createMemorychatClient(service.baseUrl, service.token('alice'));

    const first = await client.POST('/memoryChat', {
      body: { question: 'Show me total sales by region for 2024', use_memory: true },
    });
    expect(first.error).toBeUndefined();
    expect(first.response.status).toBe(200);
    const sessionId = first.data!.conversation_metadata!.conversation_id;
    expect(first.data!.conversation_metadata!.message_count).toBe(1);

    const second = await client.POST('/memoryChat', {
      body: { question: 'What about 2023?', session_id: sessionId, use_memory: true },
    });
    expect(second.error).toBeUndefined();
    const reply = second.data!;
    expect(reply.conversation_metadata!.conversation_id).toBe(sessionId);
    expect(reply.conversation_metadata!.message_count).toBe(2);
    expect(reply.memory_context_used.history_messages_count).toBe(1);
    expect(reply.tables_used).toEqual(['sales']);
    // The follow-up reached the upstream with the first turn's SQL as context.
    expect(upstream.lastBody().custom_instructions).toContain(salesReply('2024').sql_query);
  });

  it('when the token is missing, then the client surfaces the problem document as `error`', async () => {
    const client = createMemorychatClient(service.baseUrl, '');

    const result = await client.POST('/memoryChat', { body: { question: 'Show me total sales', use_memory: true } });

    expect(result.response.status).toBe(401);
    expect(result.data).toBeUndefined();
    expect(result.error).toMatchObject({ status: 401 });
  });
});
