import { BaseListChatMessageHistory } from '@langchain/core/chat_history';
import { AIMessage, type BaseMessage, HumanMessage } from '@langchain/core/messages';
import type { MemorychatClient } from '../index.js';

export interface MemorychatChatMessageHistoryInput {
  client: MemorychatClient;
  /** The memorychat session to read and extend; without one, the first stored turn starts a session. */
  sessionId?: string;
  /** The name of the session started without `sessionId` (default: its first question). */
  sessionName?: string;
}

/**
 * A LangChain chat history kept in a memorychat session (for `RunnableWithMessageHistory`, agents
 * that keep history in memory only, …).
 *
 * memorychat stores question/answer turns, so a human message waits in this object until the AI
 * message that answers it arrives, and the pair is stored as one turn (POST /sessions/{id}/turns);
 * the waiting question is part of `getMessages()` meanwhile. Two human messages in a row become one
 * question. System and tool messages are refused: they are not part of a turn.
 */
export class MemorychatChatMessageHistory extends BaseListChatMessageHistory {
  lc_namespace = ['memorychat', 'langchain', 'chat_history'];

  sessionId: string | undefined;
  private readonly client: MemorychatClient;
  private readonly sessionName: string | undefined;
  private pendingQuestion: string | undefined;

  constructor({ client, sessionId, sessionName }: MemorychatChatMessageHistoryInput) {
    super();
    this.client = client;
    this.sessionId = sessionId;
    this.sessionName = sessionName;
  }

  async getMessages(): Promise<BaseMessage[]> {
    const stored = this.sessionId ? await this.storedTurns(this.sessionId) : [];
    const messages = stored.flatMap((turn) => [new HumanMessage(turn.question), new AIMessage(turn.answer)]);
    if (this.pendingQuestion !== undefined) messages.push(new HumanMessage(this.pendingQuestion));
    return messages;
  }

  async addMessage(message: BaseMessage): Promise<void> {
    const type = message.getType();
    if (type === 'human') {
      this.pendingQuestion = this.pendingQuestion === undefined ? message.text : `${this.pendingQuestion}\n${message.text}`;
      return;
    }
    if (type !== 'ai') {
      throw new Error(`memorychat stores question/answer turns: a "${type}" message cannot be stored`);
    }
    if (this.pendingQuestion === undefined) {
      throw new Error('memorychat stores question/answer turns: an AI message needs the human message it answers first');
    }
    await this.storeTurn(this.pendingQuestion, message.text);
    this.pendingQuestion = undefined;
  }

  /** Forgets the session's turns (POST /sessions/{id}/clear); the session itself stays. */
  override async clear(): Promise<void> {
    this.pendingQuestion = undefined;
    if (!this.sessionId) return;
    const { error } = await this.client.POST('/sessions/{id}/clear', { params: { path: { id: this.sessionId } } });
    if (error) throw problemError('clear the session', error);
  }

  private async storedTurns(sessionId: string) {
    const { data, error } = await this.client.GET('/sessions/{id}', { params: { path: { id: sessionId } } });
    if (error) throw problemError('read the session', error);
    return data.turns;
  }

  private async storeTurn(question: string, answer: string): Promise<void> {
    if (this.sessionId) {
      const { error } = await this.client.POST('/sessions/{id}/turns', {
        params: { path: { id: this.sessionId } },
        body: { question, answer },
      });
      if (error) throw problemError('store the turn', error);
      return;
    }
    const { data, error } = await this.client.POST('/sessions/turns', {
      body: { question, answer, ...(this.sessionName ? { session_name: this.sessionName } : {}) },
    });
    if (error) throw problemError('store the turn', error);
    this.sessionId = data.session.session_id;
  }
}

/** The service's RFC 9457 problem document as an Error that names what failed. */
export function problemError(action: string, problem: { status?: number; title?: string; detail?: string }): Error {
  const what = [problem.title, problem.detail].filter(Boolean).join(': ');
  return new Error(`memorychat could not ${action} (${problem.status ?? 'no status'}${what ? ` ${what}` : ''})`);
}
