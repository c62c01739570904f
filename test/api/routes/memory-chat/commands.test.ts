import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

describe('memory commands in /memoryChat', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let off: TestApp;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
    off = await startTestApp({ ANSWER_URL: upstream.answerUrl, MEMORY_COMMANDS: 'off' });
  });
  afterAll(async () => {
    await off?.close();
    await stopServiceWithUpstream({ t, upstream });
  });

  const chat = (app: TestApp, sub: string, body: Record<string, unknown>) =>
    app.request('POST', '/memoryChat', { token: app.token(sub), body });

  it('when a user asks for SQL, a CSV or their questions, then memory answers without the answerer, and commands never become history', async () => {
    const key = 'slack:T1:commands';
    const first = await chat(t, 'cmd', { question: 'Total sales by region for 2022', session_key: key });
    const second = await chat(t, 'cmd', { question: 'How many Android users bought something in 2023?', session_key: key });
    const sessionId = first.body.conversation_metadata.conversation_id;
    const upstreamCalls = upstream.requests.length;

    const byOrdinal = await chat(t, 'cmd', { question: 'Show me the SQL for the first question', session_key: key });
    expect(byOrdinal.status).toBe(200);
    expect(byOrdinal.body.memory_command).toMatchObject({ name: 'show_sql', found: true, turn_number: 1 });
    expect(byOrdinal.body.sql_query).toBe(first.body.sql_query);
    expect(byOrdinal.body.answer).toContain(first.body.sql_query);

    const byKeyword = await chat(t, 'cmd', { question: 'What query did you run for the Android question?', session_key: key });
    expect(byKeyword.body.memory_command).toMatchObject({ name: 'show_sql', turn_number: 2 });
    expect(byKeyword.body.sql_query).toBe(second.body.sql_query);

    const previous = await chat(t, 'cmd', { question: 'what query did you run for the previous question?', session_key: key });
    expect(previous.body.memory_command).toMatchObject({ name: 'show_sql', turn_number: 1 });

    const csv = await chat(t, 'cmd', { question: 'export that as CSV', session_key: key });
    expect(csv.body.memory_command).toMatchObject({
      name: 'export_csv',
      turn_number: 2,
      csv_url: `/sessions/${sessionId}/turns/2/result.csv`,
      csv: 'region\nEMEA\n',
    });
    expect(csv.body.csv_url).toBe(csv.body.memory_command.csv_url);
    expect(first.body.csv_url).toBe(`/sessions/${sessionId}/turns/1/result.csv`);
    expect(byOrdinal.body).not.toHaveProperty('csv_url');
    const download = await t.request('GET', csv.body.memory_command.csv_url, { token: t.token('cmd') });
    expect(download.body).toBe('region\nEMEA\n');

    const recall = await chat(t, 'cmd', { question: 'what did I ask before?', session_key: key });
    expect(recall.body.memory_command).toEqual({
      name: 'recall',
      questions: [
        { turn_number: 1, question: 'Total sales by region for 2022', sql_query: first.body.sql_query },
        { turn_number: 2, question: 'How many Android users bought something in 2023?', sql_query: second.body.sql_query },
      ],
    });
    // The conversation's latest SQL, which the next follow-up builds on; and each question's SQL in the answer.
    expect(recall.body.sql_query).toBe(second.body.sql_query);
    expect(recall.body.answer).toContain(`SQL: ${first.body.sql_query}`);
    expect(upstream.requests.length).toBe(upstreamCalls);

    const next = await chat(t, 'cmd', { question: 'And for 2024?', session_key: key });
    expect(next.body.memory_context_used.history_messages_count).toBe(2);
    expect(String(upstream.lastBody().custom_instructions)).not.toMatch(/show me the sql|export that|what did i ask/i);

    const detail = await t.request('GET', `/sessions/${sessionId}`, { token: t.token('cmd') });
    expect(detail.body.turns.map((turn: { status: string }) => turn.status)).toEqual([
      'ok',
      'ok',
      'memory_command',
      'memory_command',
      'memory_command',
      'memory_command',
      'memory_command',
      'ok',
    ]);
    expect(detail.body.turns[2].sql_query).toBeNull();
  });

  it('when the user types /clear, then the session is cleared and the next question starts without history', async () => {
    const key = 'telegram:clear-me';
    await chat(t, 'clearer', { question: 'Total sales for 2020', session_key: key });
    const cleared = await chat(t, 'clearer', { question: '/clear', session_key: key });
    expect(cleared.body.memory_command).toEqual({ name: 'forget', cleared: true });
    expect(cleared.body.conversation_metadata.message_count).toBe(1);
    const next = await chat(t, 'clearer', { question: 'Total sales for 2021', session_key: key });
    expect(next.body.memory_context_used.history_messages_count).toBe(0);
    expect(next.body.conversation_metadata.conversation_id).toBe(cleared.body.conversation_metadata.conversation_id);
  });

  it('when the user types /forget, then the session no longer bears the first question as its name, and a replayed Idempotency-Key does not hand the forgotten answer back', async () => {
    const key = 'telegram:forget-me';
    const token = t.token('forgetter');
    const secret = 'Total sales for the secret merger 2019';
    const ask = () =>
      t.request('POST', '/memoryChat', {
        token,
        headers: { 'idempotency-key': 'forget-me-1' },
        body: { question: secret, session_key: key },
      });
    const first = await ask();
    expect(first.status).toBe(200);
    const sessionId = first.body.conversation_metadata.conversation_id;
    const listed = async () =>
      (await t.request('GET', '/sessions', { token })).body.sessions.find((s: { session_id: string }) => s.session_id === sessionId);
    expect((await listed()).session_name).toBe(secret);
    expect((await ask()).headers.get('idempotent-replayed')).toBe('true');

    const forgotten = await chat(t, 'forgetter', { question: '/forget', session_key: key });
    expect(forgotten.body.memory_command).toEqual({ name: 'forget', cleared: true });
    expect((await listed()).session_name).toBe('Forgotten conversation');
    const recall = await chat(t, 'forgetter', { question: 'what did I ask before?', session_key: key });
    expect(JSON.stringify(recall.body)).not.toContain('secret merger');

    // The retried request runs again instead of replaying the reply that quoted the forgotten turn.
    const upstreamCalls = upstream.requests.length;
    const replay = await ask();
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBeNull();
    expect(upstream.requests.length).toBe(upstreamCalls + 1);
  });

  it('when MEMORY_COMMANDS=off or the request sends memory_commands: false, then the message goes to the answerer', async () => {
    const before = upstream.requests.length;
    const viaConfig = await chat(off, 'plain', { question: 'show me the SQL' });
    expect(viaConfig.body.memory_command).toBeUndefined();
    const viaFlag = await chat(t, 'plain', { question: 'show me the SQL', memory_commands: false });
    expect(viaFlag.body.memory_command).toBeUndefined();
    expect(upstream.requests.length).toBe(before + 2);
    expect(upstream.lastBody()).not.toHaveProperty('memory_commands');
  });

  it('when a conversation has no SQL yet, then show SQL says so instead of failing', async () => {
    const reply = await chat(t, 'fresh', { question: 'show me the SQL' });
    expect(reply.status).toBe(200);
    expect(reply.body.memory_command).toEqual({ name: 'show_sql', found: false });
    expect(reply.body.sql_query).toBeNull();
    expect(reply.body.answer).toMatch(/no earlier question/);
  });
});
