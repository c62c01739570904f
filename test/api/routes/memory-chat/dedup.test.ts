import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson } from '../../../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

describe('dedup of /memoryChat turns', () => {
  let upstream: FakeUpstream;
  let t: TestApp;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  const chat = (body: Record<string, unknown>) => t.request('POST', '/memoryChat', { token: t.token('repeater'), body });

  it('when a question nearly repeats one of its session, then the turn is stored as its duplicate and search shows the original only', async () => {
    const first = await chat({ question: 'How many singers come from France?' });
    const sessionId = first.body.conversation_metadata.conversation_id;
    expect(first.body.duplicate_of).toBeNull();
    const other = await chat({ question: 'Total sales by region for 2024', session_id: sessionId });
    expect(other.body.duplicate_of).toBeNull();
    const repeat = await chat({ question: 'How many singers come from France ?', session_id: sessionId });
    expect(repeat.body.duplicate_of).toBe(1);

    const detail = await t.request('GET', `/sessions/${sessionId}`, { token: t.token('repeater') });
    expect(detail.body.turns.map((turn: { duplicate_of: number | null }) => turn.duplicate_of)).toEqual([null, null, 1]);
    const search = await t.request('POST', '/memory/search', { token: t.token('repeater'), body: { query: 'singers from France', k: 5 } });
    expect(
      search.body.results
        .filter((r: { question: string }) => r.question.includes('singers'))
        .map((r: { turn_number: number }) => r.turn_number),
    ).toEqual([1]);
  });

  it('when a question is asked again after the answerer failed or after a memory command, then it is no duplicate of those', async () => {
    const first = await chat({ question: '/clear' });
    const sessionId = first.body.conversation_metadata.conversation_id;
    upstream.handle((_req, res) => void res.writeHead(500).end());
    const failed = await chat({ question: 'How many orders shipped in May?', session_id: sessionId });
    expect(failed.status).toBe(502);
    upstream.handle((req, res) => sendJson(res, 200, salesReply(String(req.body?.question ?? ''))));
    const retried = await chat({ question: 'How many orders shipped in May?', session_id: sessionId });
    expect(retried.body.duplicate_of).toBeNull();
    const command = await chat({ question: '/clear', session_id: sessionId });
    expect(command.body.memory_command.name).toBe('forget');
  });

  it('when the same question is asked in another session, then it is no duplicate', async () => {
    const reply = await chat({ question: 'How many singers come from France?' });
    expect(reply.body.duplicate_of).toBeNull();
  });
});
