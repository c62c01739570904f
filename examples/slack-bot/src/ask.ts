import type { MemorychatClient } from 'memorychat-client';
import { needsSignIn, signInText } from './sign-in.js';

/** What the bot posts back for one message: text, and a CSV file when the user asked for the data. */
export interface BotReply {
  text: string;
  csv?: { filename: string; content: string };
  /** For the asking user's eyes only (an ephemeral message): the sign-in link. */
  private?: boolean;
}

/**
 * Sends a message to memorychat in the conversation `sessionKey` and turns the reply into what Slack
 * shows. "show me the SQL" and "export that as CSV" are memory commands of the service
 * (docs/chat-native.md): it recognises them, so the bot needs no command parser of its own.
 */
export async function ask(
  memorychat: MemorychatClient,
  question: string,
  sessionKey: string,
  memoryScope?: 'session' | 'user',
): Promise<BotReply> {
  const { data, error } = await memorychat.POST('/memoryChat', {
    body: { question, session_key: sessionKey, ...(memoryScope ? { memory_scope: memoryScope } : {}) },
  });
  if (!data) {
    if (needsSignIn(error?.code)) return { text: await signInText(memorychat, error.code), private: true };
    return { text: `:warning: memorychat could not answer: ${escapeMrkdwn(error?.detail ?? error?.title ?? 'no reply')}` };
  }
  const command = data.memory_command;
  if (command?.name === 'show_sql' && command.found) {
    return { text: `The SQL for _${escapeMrkdwn(command.question ?? '')}_:\n\`\`\`\n${escapeMrkdwn(command.sql_query ?? '')}\n\`\`\`` };
  }
  if (command?.name === 'export_csv' && command.found && command.turn_number !== undefined && data.conversation_metadata) {
    const content = command.csv ?? (await downloadCsv(memorychat, data.conversation_metadata.conversation_id, command.turn_number));
    if (content !== undefined) {
      return {
        text: `The data of _${escapeMrkdwn(command.question ?? '')}_`,
        csv: { filename: `question-${command.turn_number}.csv`, content },
      };
    }
  }
  return { text: escapeMrkdwn(data.answer) };
}

/**
 * Slack reads `<…>` in message text as a mention, a channel-wide ping (`<!channel>`) or a link, so
 * text from users and the answerer has its `&`, `<` and `>` escaped, as Slack's formatting docs ask.
 */
function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A result too large to come inline (over 8 KB) is fetched from the turn's CSV route. */
async function downloadCsv(memorychat: MemorychatClient, sessionId: string, turn: number): Promise<string | undefined> {
  const { data } = await memorychat.GET('/sessions/{id}/turns/{ref}/result.csv', {
    params: { path: { id: sessionId, ref: String(turn) } },
    parseAs: 'text',
  });
  return typeof data === 'string' ? data : undefined;
}
