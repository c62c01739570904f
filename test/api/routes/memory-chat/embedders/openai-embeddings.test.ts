import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedText } from '../../../../../services/providers/embeddings/local-embedder.js';
import { startFakeOpenAI } from '../../../../support/fakes/fake-llm.js';
import type { FakeUpstream } from '../../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../../support/service/test-app.js';

/** /memoryChat with EMBEDDINGS_PROVIDER=openai: the real openai SDK against a local Embeddings API. */
describe('embeddings from an OpenAI-compatible server', () => {
  let upstream: FakeUpstream;
  let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let t: TestApp;
  let dimensionsSent = 0;

  beforeAll(async () => {
    openai = await startFakeOpenAI(
      () => 'unused',
      // A server whose model gives other sizes than asked for, when told to.
      (inputs, dimensions) => inputs.map((text) => embedText(text, dimensionsSent || dimensions)!),
    );
    ({ t, upstream } = await startServiceWithUpstream({
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_MODEL: 'text-embedding-compatible',
      EMBEDDINGS_DIMENSIONS: '64',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: openai.baseURL,
    }));
  });
  afterAll(async () => {
    await stopServiceWithUpstream({ t, upstream });
    await openai?.close();
  });

  const ask = async (sub: string, question: string) => {
    const reply = await t.request('POST', '/memoryChat', { token: t.token(sub), body: { question } });
    expect(reply.status).toBe(200);
    return reply.body;
  };

  it('when a user asks again about what they asked before, then the turns are embedded by the server with the model and size set, and the earlier turn is found', async () => {
    await ask('analyst', 'Show me total sales by region for 2024');
    const second = await ask('analyst', 'Show me total sales by region for 2023');
    expect(second.memory_context_used.similar_queries_count).toBe(1);
    const calls = openai.requests.filter((r) => r.path === '/v1/embeddings');
    expect(calls.length).toBeGreaterThanOrEqual(3);
    for (const call of calls)
      expect(call.body).toMatchObject({ model: 'text-embedding-compatible', dimensions: 64, encoding_format: 'float' });
    const { rows } = await t.admin.query(`SELECT DISTINCT embedding_model FROM turns WHERE user_id = 'analyst'`);
    expect(rows).toEqual([{ embedding_model: 'text-embedding-compatible@64' }]);
  });

  it('when a question is asked again in its session, then the server embeds it once, for the search, and the turn is still marked as the repeat of the first', async () => {
    const question = 'Which regions sold more than 1000 units last month?';
    const first = await t.request('POST', '/memoryChat', { token: t.token('repeater'), body: { question } });
    const sessionId = first.body.conversation_metadata.conversation_id;
    const before = openai.requests.length;
    const again = await t.request('POST', '/memoryChat', { token: t.token('repeater'), body: { question, session_id: sessionId } });
    expect(again.status).toBe(200);
    expect(again.body.duplicate_of).toBe(1);
    const inputs = openai.requests
      .slice(before)
      .filter((r) => r.path === '/v1/embeddings')
      .flatMap((r) => (typeof r.body.input === 'string' ? [r.body.input] : (r.body.input as string[])));
    // The search's embedding of the new question, and the session's earlier question for the dedup.
    expect(inputs.filter((input) => input === question)).toHaveLength(2);
  });

  it('when the server returns vectors of another size, then the question is answered without semantic search and the turn is stored for re-embedding', async () => {
    dimensionsSent = 32;
    try {
      const reply = await ask('sizer', 'How many stores are open?');
      expect(reply.warnings).toContain('semantic memory search is unavailable: answered with the conversation history only');
      const { rows } = await t.admin.query(`SELECT embedding IS NULL AS missing, embedding_model FROM turns WHERE user_id = 'sizer'`);
      expect(rows).toEqual([{ missing: true, embedding_model: null }]);
    } finally {
      dimensionsSent = 0;
    }
  });
});
