import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, startFakeOpenAI } from '../../../support/fakes/fake-llm.js';
import { type FakeUpstream, startFakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

const FIRST = 'Show me total sales by region for 2024';
const FIRST_SQL = 'SELECT region, SUM(amount) FROM sales WHERE year = 2024 GROUP BY region';

async function askFollowUp(t: TestApp, sub = 'alice') {
  const token = t.token(sub);
  const first = await t.request('POST', '/memoryChat', { token, body: { question: FIRST } });
  expect(first.status).toBe(200);
  return t.request('POST', '/memoryChat', {
    token,
    body: { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id },
  });
}

describe('augmentation strategies', () => {
  let upstream: FakeUpstream;
  let openai: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let anthropic: Awaited<ReturnType<typeof startFakeAnthropic>>;
  let openaiFails = false;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    openai = await startFakeOpenAI(() =>
      openaiFails
        ? { status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } }
        : 'What were total sales by region for 2023?',
    );
    anthropic = await startFakeAnthropic(() => 'Total sales by region in 2023?');
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await Promise.all([upstream?.close(), openai?.close(), anthropic?.close()]);
  });

  async function app(env: Record<string, string>) {
    const t = await startTestApp({ ANSWER_URL: upstream.answerUrl, ...env });
    apps.push(t);
    return t;
  }

  it('when the strategy is inline, then the question carries the previous question and SQL', async () => {
    const t = await app({ MEMORY_AUGMENTATION: 'inline' });
    const reply = await askFollowUp(t);
    expect(reply.status).toBe(200);
    const sent = upstream.lastBody();
    expect(sent.question).toContain(FIRST);
    expect(sent.question).toContain(FIRST_SQL);
    expect(sent.question.endsWith('Current question: What about 2023?')).toBe(true);
    expect(sent.custom_instructions).toBeUndefined();
    expect(reply.body.memory_context_used.augmented_question).toBe(sent.question);
    expect(reply.body.memory_context_used.custom_instructions).toBeUndefined();
  });

  it('when the strategy is rewrite with OpenAI, then the rewritten question is sent and the prior SQL goes to custom_instructions', async () => {
    const t = await app({
      MEMORY_AUGMENTATION: 'rewrite',
      LLM_PROVIDER: 'openai',
      LLM_MODEL: 'gpt-test',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: openai.baseURL,
    });
    const reply = await askFollowUp(t);
    expect(reply.status).toBe(200);
    const sent = upstream.lastBody();
    expect(sent.question).toBe('What were total sales by region for 2023?');
    expect(sent.custom_instructions).toContain(FIRST_SQL);
    const llmCall = openai.requests.at(-1)!;
    expect(llmCall.headers.authorization).toBe('Bearer sk-test');
    expect(JSON.stringify(llmCall.body.messages)).toContain('What about 2023?');
    expect(JSON.stringify(llmCall.body.messages)).toContain(FIRST);
    expect(reply.body.warnings).toEqual([]);
  });

  it('when the strategy is rewrite with Anthropic, then the Messages API rewrites the question', async () => {
    const t = await app({
      MEMORY_AUGMENTATION: 'rewrite',
      LLM_PROVIDER: 'anthropic',
      LLM_MODEL: 'claude-test',
      ANTHROPIC_API_KEY: 'ak-test',
      ANTHROPIC_BASE_URL: anthropic.baseURL,
    });
    const reply = await askFollowUp(t);
    expect(upstream.lastBody().question).toBe('Total sales by region in 2023?');
    const headers = anthropic.requests.at(-1)!.headers;
    // SDK versions differ: X-Api-Key or a bearer Authorization header.
    expect(headers['x-api-key'] ?? headers.authorization).toMatch(/ak-test$/);
    expect(reply.body.memory_context_used.augmented_question).toBe('Total sales by region in 2023?');
  });

  it('when rewrite has no LLM configured, then it falls back to instructions and warns', async () => {
    const t = await app({ MEMORY_AUGMENTATION: 'rewrite' });
    const reply = await askFollowUp(t);
    expect(reply.status).toBe(200);
    expect(upstream.lastBody().question).toBe('What about 2023?');
    expect(upstream.lastBody().custom_instructions).toContain(FIRST_SQL);
    expect(reply.body.warnings.join(' ')).toMatch(/LLM_PROVIDER/);
  });

  it('when the rewriting LLM fails, then the question is sent as asked with a warning', async () => {
    const t = await app({
      MEMORY_AUGMENTATION: 'rewrite',
      LLM_PROVIDER: 'openai',
      LLM_MODEL: 'gpt-test',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: openai.baseURL,
    });
    openaiFails = true;
    try {
      const reply = await askFollowUp(t);
      expect(reply.status).toBe(200);
      expect(upstream.lastBody().question).toBe('What about 2023?');
      expect(reply.body.warnings.join(' ')).toMatch(/could not be rewritten/);
    } finally {
      openaiFails = false;
    }
  });

  it('when the caller sends custom_instructions, then memory is appended after them', async () => {
    const t = await app({});
    const token = t.token('carol');
    const first = await t.request('POST', '/memoryChat', { token, body: { question: FIRST, vdp_database_names: 'samples_bank' } });
    await t.request('POST', '/memoryChat', {
      token,
      body: {
        question: 'What about 2023?',
        session_id: first.body.conversation_metadata.conversation_id,
        custom_instructions: 'Answer in French.',
        markdown_response: false,
        vdp_database_names: 'samples_bank',
      },
    });
    const sent = upstream.lastBody();
    expect(sent.custom_instructions.startsWith('Answer in French.\n\n')).toBe(true);
    expect(sent.custom_instructions).toContain(FIRST_SQL);
    expect(sent).toMatchObject({ markdown_response: false, vdp_database_names: 'samples_bank' });
    expect(sent.session_id).toBeUndefined();
    expect(sent.use_memory).toBeUndefined();
  });
});
