import type { MemorychatClient } from 'memorychat-client';
import { needsSignIn, signInHtml } from './sign-in.js';

/**
 * What the bot sends back for one message: HTML messages, in order, or a caption and a CSV document
 * when the user asked for the data.
 */
export type BotReply =
  | { messages: string[] }
  | { caption: string; csv: { filename: string; content: string } }
  /** The user must sign in to Denodo first: HTML with their sign-in link, for their private chat only. */
  | { signIn: string };

// Telegram takes at most 4096 characters of text in a message and 1024 in a caption (after HTML parsing).
const MESSAGE_CHARS = 4000;
const QUOTED_QUESTION_CHARS = 200;

/**
 * Sends a message to memorychat in the conversation `sessionKey` and turns the reply into what
 * Telegram shows. /sql and /csv are sent as the service's memory commands ("show me the SQL",
 * "export that as CSV": docs/chat-native.md), which find the turn meant and answer from memory.
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
    if (needsSignIn(error?.code)) return { signIn: await signInHtml(memorychat, error.code) };
    return { messages: [`memorychat could not answer: ${escapeHtml(error?.detail ?? error?.title ?? 'no reply')}`] };
  }
  const command = data.memory_command;
  if (command?.name === 'show_sql' && command.found) {
    const sql = splitText(command.sql_query ?? '').map((part) => `<pre><code class="language-sql">${escapeHtml(part)}</code></pre>`);
    return { messages: [`The SQL for <i>${quoted(command.question)}</i>:\n${sql[0]}`, ...sql.slice(1)] };
  }
  if (command?.name === 'export_csv' && command.found && command.turn_number !== undefined && data.conversation_metadata) {
    const content = command.csv ?? (await downloadCsv(memorychat, data.conversation_metadata.conversation_id, command.turn_number));
    if (content !== undefined) {
      return {
        caption: `The data of <i>${quoted(command.question)}</i>`,
        csv: { filename: `question-${command.turn_number}.csv`, content },
      };
    }
  }
  return { messages: splitText(data.answer).map(escapeHtml) };
}

/** Long text in pieces of at most MESSAGE_CHARS, cut at a line break, else a space, where there is one. */
function splitText(text: string): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > MESSAGE_CHARS) {
    const breakAt = [rest.lastIndexOf('\n', MESSAGE_CHARS), rest.lastIndexOf(' ', MESSAGE_CHARS)].find((at) => at > MESSAGE_CHARS / 2);
    const cut = breakAt ?? MESSAGE_CHARS;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(breakAt === undefined ? cut : cut + 1);
  }
  return [...parts, rest];
}

function quoted(question = ''): string {
  return escapeHtml(question.length > QUOTED_QUESTION_CHARS ? `${question.slice(0, QUOTED_QUESTION_CHARS - 1)}…` : question);
}

/** A result too large to come inline (over 8 KB) is fetched from the turn's CSV route. */
async function downloadCsv(memorychat: MemorychatClient, sessionId: string, turn: number): Promise<string | undefined> {
  const { data } = await memorychat.GET('/sessions/{id}/turns/{ref}/result.csv', {
    params: { path: { id: sessionId, ref: String(turn) } },
    parseAs: 'text',
  });
  return typeof data === 'string' ? data : undefined;
}

/** Telegram's HTML parse mode needs only these three escaped. */
function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
