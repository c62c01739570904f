// memorychat-client/langchain with @langchain/core against the running service: the chat history as
// RunnableWithMessageHistory uses it, and the retriever over /memory/search.
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { RunnableLambda, RunnableWithMessageHistory } from '@langchain/core/runnables';
import { createMemorychatClient } from 'memorychat-client';
import { MemorychatChatMessageHistory, MemorychatRetriever } from 'memorychat-client/langchain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

describe('the LangChain adapter', () => {
  let service: TestApp;

  beforeAll(async () => {
    service = await startTestApp();
  });

  afterAll(async () => {
    await service?.close();
  });

  const clientFor = (user: string) => createMemorychatClient(service.baseUrl, service.token(user));

  it('when a chain runs with the history, then each exchange is one stored turn and the next run sees the earlier ones', async () => {
    const memorychat = clientFor('langchain-user');
    const seen: number[] = [];
    // The model: answers with how many history messages it was given, so the test sees what the chain passed.
    const model = RunnableLambda.from(async (input: { question: string; history?: BaseMessage[] }) => {
      // RunnableWithMessageHistory fills `history` in.
      const history = input.history ?? [];
      seen.push(history.length);
      return new AIMessage(`answer ${history.length / 2 + 1} to: ${input.question}`);
    });
    const histories = new Map<string, MemorychatChatMessageHistory>();
    const chat = new RunnableWithMessageHistory<{ question: string }, AIMessage>({
      runnable: model,
      getMessageHistory: (threadId: string) => {
        if (!histories.has(threadId))
          histories.set(threadId, new MemorychatChatMessageHistory({ client: memorychat, sessionName: threadId }));
        return histories.get(threadId)!;
      },
      inputMessagesKey: 'question',
      historyMessagesKey: 'history',
    });

    await chat.invoke({ question: 'Total sales by region for 2024?' }, { configurable: { sessionId: 'thread-1' } });
    const third = await chat
      .invoke({ question: 'And 2023?' }, { configurable: { sessionId: 'thread-1' } })
      .then(() => chat.invoke({ question: 'And 2022?' }, { configurable: { sessionId: 'thread-1' } }));

    expect(seen).toEqual([0, 2, 4]);
    expect(third.text).toBe('answer 3 to: And 2022?');
    const sessionId = histories.get('thread-1')!.sessionId!;
    const { data: session } = await memorychat.GET('/sessions/{id}', { params: { path: { id: sessionId } } });
    expect(session?.session_name).toBe('thread-1');
    expect(session?.turns.map((t) => [t.question, t.answer])).toEqual([
      ['Total sales by region for 2024?', 'answer 1 to: Total sales by region for 2024?'],
      ['And 2023?', 'answer 2 to: And 2023?'],
      ['And 2022?', 'answer 3 to: And 2022?'],
    ]);

    // A new process resumes the thread from the session id alone.
    const resumed = new MemorychatChatMessageHistory({ client: memorychat, sessionId });
    const messages = await resumed.getMessages();
    expect(messages.map((m) => [m.getType(), m.text])).toEqual(
      session!.turns.flatMap((t) => [
        ['human', t.question],
        ['ai', t.answer],
      ]),
    );
  });

  it('when a question waits for its answer, then the history shows it, stores nothing yet, and refuses other kinds of message', async () => {
    const memorychat = clientFor('pending-user');
    const history = new MemorychatChatMessageHistory({ client: memorychat });
    await history.addUserMessage('Top customers?');

    expect((await history.getMessages()).map((m) => m.text)).toEqual(['Top customers?']);
    expect(history.sessionId).toBeUndefined();
    expect((await memorychat.GET('/sessions')).data?.sessions).toEqual([]);
    await expect(history.addMessage(new SystemMessage('You are terse.'))).rejects.toThrow(/"system" message/);

    await history.addMessages([new HumanMessage('in 2024'), new AIMessage('ACME and Initech.')]);
    const { data: stored } = await memorychat.GET('/sessions/{id}', { params: { path: { id: history.sessionId! } } });
    expect(stored?.turns.map((t) => [t.question, t.answer])).toEqual([['Top customers?\nin 2024', 'ACME and Initech.']]);
  });

  it('when the history is cleared, then the turns are gone and the session stays', async () => {
    const memorychat = clientFor('clearing-user');
    const history = new MemorychatChatMessageHistory({ client: memorychat });
    await history.addMessages([new HumanMessage('Revenue 2024?'), new AIMessage('1 M.')]);

    await history.clear();

    expect(await history.getMessages()).toEqual([]);
    const { data: page } = await memorychat.GET('/sessions');
    expect(page?.sessions.map((s) => [s.session_id, s.message_count])).toEqual([[history.sessionId, 0]]);
  });

  it('when the retriever is asked, then it returns the most similar past turns as documents with their score and SQL', async () => {
    const memorychat = clientFor('retrieving-user');
    await memorychat.POST('/sessions/turns', {
      body: {
        question: 'Total sales by region for 2024',
        answer: 'EMEA 100, AMER 200.',
        sql_query: 'SELECT region, SUM(amount) FROM sales',
      },
    });
    await memorychat.POST('/sessions/turns', { body: { question: 'Which employees joined in March?', answer: 'Ann and Bo.' } });
    // Another user's identical question must never come back.
    await clientFor('someone-else').POST('/sessions/turns', { body: { question: 'Total sales by region for 2024', answer: 'secret' } });

    const docs = await new MemorychatRetriever({ client: memorychat, k: 1 }).invoke('sales by region 2024');

    expect(docs).toHaveLength(1);
    expect(docs[0]!.pageContent).toBe(
      'Q: Total sales by region for 2024\nA: EMEA 100, AMER 200.\nSQL: SELECT region, SUM(amount) FROM sales',
    );
    expect(docs[0]!.metadata).toMatchObject({ turn_number: 1, sql_query: 'SELECT region, SUM(amount) FROM sales', tables_used: [] });
    expect(docs[0]!.metadata.similarity).toBeGreaterThan(0);
    expect(docs[0]!.metadata.similarity).toBeLessThanOrEqual(1);
  });

  it('when the service refuses, then the adapter throws an error naming the problem', async () => {
    const history = new MemorychatChatMessageHistory({ client: clientFor('x'), sessionId: '00000000-0000-4000-8000-000000000000' });
    await expect(history.getMessages()).rejects.toThrow(/could not read the session \(404/);
  });
});
