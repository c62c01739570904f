import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicViolations, openAiViolations } from '../../../support/fakes/chain-rules.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

// A photo-sized base64 payload (about 150 KB), well below the turn body limit set below.
const PHOTO = Buffer.alloc(110_000, 7).toString('base64');

/** The recipe assistant's turn: a photo, two tool calls, their results, then the answer. */
function recipeChain(suffix = '') {
  return [
    {
      role: 'user',
      content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PHOTO } },
        { type: 'text', text: `What can I cook with what is in this fridge?${suffix}` },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look up recipes.' },
        { type: 'tool_use', id: `toolu_1${suffix}`, name: 'search_recipes', input: { ingredients: ['eggs', 'spinach'] } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_1${suffix}`, content: 'Spinach omelette; Shakshuka' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: `toolu_2${suffix}`, name: 'get_recipe', input: { name: 'Spinach omelette' } }] },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: `toolu_2${suffix}`, content: [{ type: 'text', text: 'Whisk 3 eggs, wilt spinach, fold.' }] },
      ],
    },
    { role: 'assistant', content: [{ type: 'text', text: 'Make a spinach omelette: whisk 3 eggs, wilt the spinach, fold.' }] },
  ];
}

describe('memory API: turns and context', () => {
  let t: TestApp;
  let alice: string;

  beforeAll(async () => {
    t = await startTestApp({ MEMORY_TURN_BODY_LIMIT_BYTES: '400000', BODY_LIMIT_BYTES: '65536' });
    alice = t.token('alice');
  });
  afterAll(async () => {
    await t?.close();
  });

  async function storeTurn(sessionId: string | undefined, body: Record<string, unknown>, token = alice) {
    const url = sessionId ? `/sessions/${sessionId}/turns` : '/sessions/turns';
    return t.request('POST', url, { token, body });
  }

  it('when a tool-use chain with a photo is stored, then anthropic context replays it valid with the photo replaced', async () => {
    const stored = await storeTurn(undefined, { question: 'What can I cook?', answer: 'A spinach omelette.', messages: recipeChain() });
    expect(stored.status).toBe(201);
    const sessionId = stored.body.session.session_id;
    const second = await storeTurn(sessionId, { question: 'And for dessert?', answer: 'Baked apples.' });
    expect(second.status).toBe(201);

    const ctx = await t.request('POST', '/memory/context', {
      token: alice,
      body: { question: 'How long does it take?', session_id: sessionId, format: 'anthropic' },
    });
    expect(ctx.status).toBe(200);
    const messages = ctx.body.messages;
    expect(anthropicViolations(messages)).toEqual([]);
    expect(messages[0].role).toBe('user');
    expect(messages.at(-1).role).toBe('assistant');
    expect(JSON.stringify(messages)).not.toContain(PHOTO.slice(0, 100));
    expect(messages[0].content[0]).toEqual({ type: 'text', text: '[image: photo]' });
    const toolUses = messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : [])).filter((b: any) => b.type === 'tool_use');
    expect(toolUses.map((b: any) => b.id)).toEqual(['toolu_1', 'toolu_2']);
    expect(ctx.body.history_turns).toEqual([1, 2]);
    expect(ctx.body.tokens.total).toBeGreaterThan(0);

    const session = await t.request('GET', `/sessions/${sessionId}`, { token: alice });
    expect(JSON.stringify(session.body)).not.toContain(PHOTO.slice(0, 100));
    expect(session.body.turns[0].messages_format).toBe('anthropic');
  });

  it('when the same session is read as openai, then tool_calls are followed by their tool messages', async () => {
    const stored = await storeTurn(undefined, { question: 'What can I cook?', answer: 'Omelette.', messages: recipeChain('b') });
    const ctx = await t.request('POST', '/memory/context', {
      token: alice,
      body: { question: 'Anything vegan?', session_id: stored.body.session.session_id, format: 'openai' },
    });
    expect(ctx.status).toBe(200);
    const messages = ctx.body.messages;
    expect(openAiViolations(messages)).toEqual([]);
    expect(messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    expect(messages[1].tool_calls[0]).toMatchObject({ id: 'toolu_1b', type: 'function', function: { name: 'search_recipes' } });
    expect(JSON.parse(messages[1].tool_calls[0].function.arguments)).toEqual({ ingredients: ['eggs', 'spinach'] });
    expect(messages[2]).toEqual({ role: 'tool', tool_call_id: 'toolu_1b', content: 'Spinach omelette; Shakshuka' });
    expect(messages[0].content).toContain('[image: photo]');
  });

  it('when an OpenAI chain with a data: image is stored, then anthropic context pairs its tool calls', async () => {
    const chain = [
      { role: 'system', content: 'You are a recipe bot.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Rate my cake' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PHOTO}` } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'rate', arguments: '{"dish":"cake"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '9/10' },
      { role: 'assistant', content: 'Lovely cake: 9/10.' },
    ];
    const stored = await storeTurn(undefined, { question: 'Rate my cake', answer: 'Lovely cake: 9/10.', messages: chain });
    expect(stored.status).toBe(201);
    const ctx = await t.request('POST', '/memory/context', {
      token: alice,
      body: { question: 'And my bread?', session_id: stored.body.session.session_id, format: 'anthropic' },
    });
    expect(anthropicViolations(ctx.body.messages)).toEqual([]);
    expect(ctx.body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(ctx.body.messages[0].content).toContainEqual({ type: 'text', text: '[image: photo]' });
    expect(JSON.stringify(ctx.body.messages)).not.toContain('You are a recipe bot');
  });

  it('when a chain has a tool_result without its tool_use, then it answers 400 invalid-message-chain and stores nothing', async () => {
    const chain = [
      { role: 'user', content: 'hi' },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'orphan' }] },
      { role: 'assistant', content: 'done' },
    ];
    const res = await storeTurn(undefined, { question: 'hi', answer: 'done', messages: chain });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body.code).toBe('invalid-message-chain');
    expect(res.body.errors[0].message).toContain('toolu_x');
    const list = await t.request('GET', '/sessions?limit=100', { token: t.token('nobody-else') });
    expect(list.body.sessions).toEqual([]);
  });

  it('when a chain ends on an unanswered tool_use, then it answers 400', async () => {
    const chain = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_y', name: 'x', input: {} }] },
    ];
    const res = await storeTurn(undefined, { question: 'hi', answer: '', messages: chain });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid-message-chain');
  });

  it('when a block is malformed, then schema validation answers 400 validation-failed', async () => {
    const chain = [
      { role: 'user', content: [{ type: 'tool_use', name: 'no id' }] },
      { role: 'assistant', content: 'x' },
    ];
    const res = await storeTurn(undefined, { question: 'hi', answer: 'x', messages: chain });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation-failed');
  });

  it('when the turn body exceeds the turn limit, then it answers 413 problem', async () => {
    const res = await storeTurn(undefined, { question: 'big', answer: 'x'.repeat(450_000) });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload-too-large');
  });

  it("when the session is unknown or another user's, then turns and context answer 404", async () => {
    const stored = await storeTurn(undefined, { question: 'mine', answer: 'yes' });
    const id = stored.body.session.session_id;
    const mallory = t.token('mallory');
    expect((await storeTurn(id, { question: 'steal', answer: 'x' }, mallory)).body.code).toBe('session-not-found');
    const ctx = await t.request('POST', '/memory/context', { token: mallory, body: { question: 'q', session_id: id } });
    expect(ctx.status).toBe(404);
    const unknown = await storeTurn('00000000-0000-4000-8000-000000000000', { question: 'q', answer: 'a' });
    expect(unknown.status).toBe(404);
  });

  it('when text context is asked, then it shows relative times and slots with later values winning', async () => {
    const first = await storeTurn(undefined, {
      question: 'What joist span for 400 centres?',
      answer: 'A 3.2 m span.',
      context: { span: 3.2, memberType: 'joist', centres: 400 },
    });
    const id = first.body.session.session_id;
    t.clock.advance(2 * 60_000);
    await storeTurn(id, { question: 'what about 600 centres instead?', answer: 'A 2.9 m span.', context: { span: 2.9, centres: 600 } });
    t.clock.advance(60 * 60_000);

    const text = await t.request('POST', '/memory/context', {
      token: alice,
      body: { question: 'and 450?', session_id: id, format: 'text' },
    });
    expect(text.status).toBe(200);
    expect(text.body.slots).toEqual({ span: 2.9, memberType: 'joist', centres: 600 });
    expect(text.body.context_text).toContain('[1 hour ago] User: what about 600 centres instead?');
    expect(text.body.context_text).toContain('[1 hour ago] User: What joist span for 400 centres?');
    for (const line of ['- span: 2.9', '- memberType: joist', '- centres: 600']) expect(text.body.context_text).toContain(`\n${line}\n`);
    expect(text.body.context_text).not.toContain('- span: 3.2');
    expect(text.body.augmented_question).toMatch(/Current question: and 450\?$/);
    expect(text.body.messages).toEqual([]);
    expect(text.body.tokens.slots).toBeGreaterThan(0);
    expect(text.body.tokens.history).toBeGreaterThan(0);

    t.clock.advance(-(58 * 60_000));
    const recent = await t.request('POST', '/memory/context', { token: alice, body: { question: 'and 450?', session_id: id } });
    expect(recent.body.context_text).toContain('[2 mins ago] User: what about 600 centres instead?');
    expect(recent.body.context_text).toContain('[4 mins ago] User: What joist span for 400 centres?');

    const openai = await t.request('POST', '/memory/context', {
      token: alice,
      body: { question: 'and 450?', session_id: id, format: 'openai' },
    });
    expect(openai.body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(openai.body.slots).toEqual(text.body.slots);
    expect(openai.body.context_text).toContain('- centres: 600');
    expect(openai.body.context_text).not.toContain('User:');
  });

  it('when max_tokens is small, then whole turns are dropped oldest first and the chain stays valid', async () => {
    const first = await storeTurn(undefined, { question: 'Turn one?', answer: 'One.', messages: recipeChain('c') });
    const id = first.body.session.session_id;
    await storeTurn(id, { question: 'Turn two?', answer: 'Two.' });
    await storeTurn(id, { question: 'Turn three?', answer: 'Three.' });
    const full = await t.request('POST', '/memory/context', {
      token: alice,
      body: { question: 'q', session_id: id, format: 'anthropic', k: 0 },
    });
    expect(full.body.history_turns).toEqual([1, 2, 3]);
    expect(full.body.truncated).toBe(false);

    const small = await t.request('POST', '/memory/context', {
      token: alice,
      body: { question: 'q', session_id: id, format: 'anthropic', k: 0, max_tokens: full.body.tokens.total - 20 },
    });
    expect(small.body.truncated).toBe(true);
    expect(small.body.history_turns).toEqual([2, 3]);
    expect(small.body.tokens.total).toBeLessThanOrEqual(full.body.tokens.total - 20);
    expect(anthropicViolations(small.body.messages)).toEqual([]);
  });

  it('when a question nearly repeats a recent one, then it is marked and search returns only one', async () => {
    const bob = t.token('bob');
    const first = await storeTurn(
      undefined,
      {
        question: 'How many Android users signed up last week?',
        answer: '1,204',
        sql_query: "SELECT count(*) FROM signups WHERE os = 'android'",
      },
      bob,
    );
    const id = first.body.session.session_id;
    const other = await storeTurn(id, { question: 'Which regions grew fastest?', answer: 'EMEA' }, bob);
    expect(other.body.turn.duplicate_of).toBeNull();
    const repeat = await storeTurn(
      id,
      {
        question: 'How many Android users signed up last week?',
        answer: '1,204',
        sql_query: "SELECT count(*) FROM signups WHERE os = 'android'",
      },
      bob,
    );
    expect(repeat.status).toBe(201);
    expect(repeat.body.turn).toMatchObject({ turn_number: 3, duplicate_of: 1 });

    const search = await t.request('POST', '/memory/search', { token: bob, body: { query: 'android users signed up', k: 5 } });
    expect(search.status).toBe(200);
    const android = search.body.results.filter((r: any) => r.question.includes('Android'));
    expect(android).toHaveLength(1);
    expect(android[0]).toMatchObject({ session_id: id, turn_number: 1 });
    expect(search.body.results[0].similarity).toBeGreaterThan(search.body.results.at(-1).similarity - 1e-9);

    const session = await t.request('GET', `/sessions/${id}`, { token: bob });
    expect(session.body.turns.map((turn: any) => turn.duplicate_of)).toEqual([null, null, 1]);
  });

  it('when search names databases, then only turns within them are returned', async () => {
    const carol = t.token('carol');
    await storeTurn(undefined, { question: 'Revenue by store', answer: 'x', vdp_database_names: ['retail'] }, carol);
    await storeTurn(undefined, { question: 'Revenue by clinic', answer: 'y', vdp_database_names: 'health' }, carol);
    const all = await t.request('POST', '/memory/search', { token: carol, body: { query: 'revenue', k: 10 } });
    expect(all.body.results).toHaveLength(2);
    const retail = await t.request('POST', '/memory/search', {
      token: carol,
      body: { query: 'revenue', k: 10, vdp_database_names: 'retail' },
    });
    expect(retail.body.results.map((r: any) => r.question)).toEqual(['Revenue by store']);
    const other = await t.request('POST', '/memory/search', { token: t.token('dave'), body: { query: 'revenue', k: 10 } });
    expect(other.body.results).toEqual([]);
  });
});
