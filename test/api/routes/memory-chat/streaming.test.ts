import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeHttpServer, type RecordedRequest, sendJson, startFakeHttpServer } from '../../../support/fakes/fake-http-server.js';
import { salesReply } from '../../../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

interface SseEvent {
  event: string;
  data: any;
}

function parseEvents(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message';
      const data = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? 'null';
      return { event, data: JSON.parse(data) };
    });
}

/** The Denodo AI SDK's answerQuestion: the whole turn as JSON. */
function answerQuestion(req: RecordedRequest, res: ServerResponse) {
  return sendJson(res, 200, salesReply(String(req.body?.question ?? '')));
}

describe('/memoryChat as Server-Sent Events', () => {
  let upstream: FakeHttpServer;
  let streaming: TestApp;

  beforeAll(async () => {
    upstream = await startFakeHttpServer(answerQuestion);
    streaming = await startTestApp({ ANSWER_URL: `${upstream.url}/answerQuestion` });
  });
  afterAll(async () => {
    await streaming?.close();
    await upstream?.close();
  });

  async function streamChat(app: TestApp, sub: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const response = await fetch(`${app.baseUrl}/memoryChat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${app.token(sub)}`, 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, events: parseEvents(await response.text()) };
  }

  async function turnsOf(app: TestApp, sub: string) {
    const { rows } = await app.admin.query(
      `SELECT turn_number, status, answer, sql_query, metadata FROM turns WHERE user_id = $1 ORDER BY turn_number`,
      [sub],
    );
    return rows;
  }

  it('when a reply is streamed, then memory comes first, the answer once the answerer has the whole turn, and the complete reply last; the turn is stored with its SQL', async () => {
    const { status, headers, events } = await streamChat(streaming, 'streamer', { question: 'Total sales by region for 2024' });
    expect(status).toBe(200);
    expect(headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(events.map((e) => e.event)).toEqual(['memory', 'answer', 'reply']);
    expect(events[0]?.data).toMatchObject({ memory_context_used: { history_messages_count: 0, similar_queries_count: 0 } });
    const expected = salesReply('Total sales by region for 2024');
    expect(events[1]?.data.text).toBe(expected.answer);
    const reply = events[2]?.data;
    expect(reply.answer).toBe(expected.answer);
    expect(reply.conversation_metadata.conversation_id).toBe(events[0]?.data.conversation_id);
    expect(upstream.requests.at(-1)?.path).toBe('/answerQuestion');
    const turns = await turnsOf(streaming, 'streamer');
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ status: 'ok', answer: expected.answer, sql_query: expected.sql_query, metadata: { streamed: true } });
  });

  it('when a reply is streamed, then the answer is one chunk and the final event equals the non-streaming reply', async () => {
    const streamed = await streamChat(streaming, 'same-a', { question: 'Total sales by region for 2024' });
    const plain = await streaming.request('POST', '/memoryChat', {
      token: streaming.token('same-b'),
      body: { question: 'Total sales by region for 2024' },
    });
    expect(streamed.events.map((e) => e.event)).toEqual(['memory', 'answer', 'reply']);
    expect(streamed.events[1]?.data.text).toBe(plain.body.answer);
    const volatile = (reply: any) => ({
      ...reply,
      conversation_metadata: { ...reply.conversation_metadata, conversation_id: 'x', created_at: 'x', updated_at: 'x', expires_at: 'x' },
      csv_url: String(reply.csv_url).replace(reply.conversation_metadata.conversation_id, 'x'),
      memory_retrieval_time: 0,
    });
    expect(volatile(streamed.events[2]?.data)).toEqual(volatile(plain.body));
  });

  it('when a streamed request is retried with its Idempotency-Key, then the stored reply is replayed, as a stream or as JSON', async () => {
    const headers = { 'idempotency-key': 'stream-1' };
    const first = await streamChat(streaming, 'idem', { question: 'Total sales for 2022' }, headers);
    const replay = await streamChat(streaming, 'idem', { question: 'Total sales for 2022' }, headers);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.events.map((e) => e.event)).toEqual(['memory', 'answer', 'reply']);
    expect(replay.events[2]?.data).toEqual(first.events[2]?.data);
    const asJson = await streaming.request('POST', '/memoryChat', {
      token: streaming.token('idem'),
      body: { question: 'Total sales for 2022' },
      headers,
    });
    expect(asJson.body).toEqual(first.events[2]?.data);
    expect(await turnsOf(streaming, 'idem')).toHaveLength(1);
  });

  it('when the client goes away before the answer, then the upstream call is abandoned and the turn is stored once, flagged incomplete, and never used as history', async () => {
    let upstreamClosed: () => void = () => {};
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    upstream.handle((_req, res) => {
      res.on('close', () => upstreamClosed());
    });
    const aborts = new AbortController();
    const response = await fetch(`${streaming.baseUrl}/memoryChat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${streaming.token('leaver')}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ question: 'Total sales by region for 2024', session_key: 'web:leaver' }),
      signal: aborts.signal,
    });
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('event: memory')) text += new TextDecoder().decode((await reader.read()).value);
    aborts.abort();
    await closed; // memorychat abandons the upstream call when its client is gone

    let turns: Awaited<ReturnType<typeof turnsOf>> = [];
    for (let i = 0; i < 100 && turns.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      turns = await turnsOf(streaming, 'leaver');
    }
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ status: 'incomplete', answer: '', sql_query: null, metadata: { incomplete: true } });

    upstream.handle(answerQuestion);
    const next = await streamChat(streaming, 'leaver', { question: 'And 2023?', session_key: 'web:leaver' });
    expect(next.events.at(-1)?.data.memory_context_used.history_messages_count).toBe(0);
  });

  it('when the answerer fails, then the stream ends with an error event carrying a problem document', async () => {
    upstream.handle((_req, res) => {
      res.socket?.destroy();
    });
    const { status, events } = await streamChat(streaming, 'broken', { question: 'Total sales by region for 2024' });
    expect(status).toBe(200);
    expect(events.map((e) => e.event)).toEqual(['memory', 'error']);
    expect(events[1]?.data).toMatchObject({ type: '/problems/upstream-failed', status: 502, code: 'upstream-failed' });
    expect(events[1]?.data.conversation_id).toBe(events[0]?.data.conversation_id);
    const turns = await turnsOf(streaming, 'broken');
    expect(turns.map((t) => t.status)).toEqual(['upstream_error']);
    upstream.handle(answerQuestion);
  });

  it('when a streamed request is refused before it starts, then it gets a plain problem response', async () => {
    const response = await fetch(`${streaming.baseUrl}/memoryChat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${streaming.token('refused')}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ question: 'x', session_id: '00000000-0000-4000-8000-000000000000' }),
    });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/problem\+json/);
  });
});
