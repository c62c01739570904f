import type { MemorychatClient } from 'memorychat-client';

/** What the bot sends back for one message: HTML text, and a CSV document when the user asked for the data. */
export interface BotReply {
  html: string;
  csv?: { filename: string; content: string };
}

/**
 * Sends a message to memorychat in the conversation `sessionKey` and turns the reply into what
 * Telegram shows. /sql and /csv are sent as the service's memory commands ("show me the SQL",
 * "export that as CSV": docs/chat-native.md), which find the turn meant and answer from memory.
 */
export async function ask(memorychat: MemorychatClient, question: string, sessionKey: string): Promise<BotReply> {
  const { data, error } = await memorychat.POST('/memoryChat', { body: { question, session_key: sessionKey } });
  if (!data) return { html: `memorychat could not answer: ${escapeHtml(error?.detail ?? error?.title ?? 'no reply')}` };
  const command = data.memory_command;
  if (command?.name === 'show_sql' && command.found) {
    return {
      html: `The SQL for <i>${escapeHtml(command.question ?? '')}</i>:\n<pre><code class="language-sql">${escapeHtml(command.sql_query ?? '')}</code></pre>`,
    };
  }
  if (command?.name === 'export_csv' && command.found && command.turn_number !== undefined && data.conversation_metadata) {
    const content = command.csv ?? (await downloadCsv(memorychat, data.conversation_metadata.conversation_id, command.turn_number));
    if (content !== undefined) {
      return {
        html: `The data of <i>${escapeHtml(command.question ?? '')}</i>`,
        csv: { filename: `question-${command.turn_number}.csv`, content },
      };
    }
  }
  return { html: escapeHtml(data.answer) };
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
