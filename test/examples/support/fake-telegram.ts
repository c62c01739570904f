// Telegram's Bot API as a bot meets it, written from its docs (core.telegram.org/bots/api): every
// method is https://api.telegram.org/bot<token>/<method>, answering {"ok": true, "result": …} or
// {"ok": false, "error_code", "description"}; parameters come as JSON, or as multipart/form-data
// when a file is uploaded (a file field may be "attach://<name>" naming another part). getUpdates
// long-polls: it answers the updates with update_id >= offset, or [] after `timeout` seconds. A
// message's commands are marked by a bot_command entity at offset 0.
import { type FakeHttpServer, type RecordedRequest, sendJson, startFakeHttpServer } from '../../support/fakes/fake-http-server.js';

export const BOT_TOKEN = '123456:fake-telegram-bot-token';
const BOT = { id: 123456, is_bot: true, first_name: 'memorychat', username: 'memorychat_bot' };

export interface BotApiCall {
  method: string;
  params: Record<string, unknown>;
  /** sendDocument: the uploaded file. */
  file?: { name: string; content: string };
}

export interface FakeTelegram {
  /** What the bot's client takes as `apiRoot`. */
  apiRoot: string;
  /** Bot API calls the bot made, in order (getUpdates left out). */
  calls: BotApiCall[];
  /**
   * A user writes `text` in chat `chatId` (a private chat when it is the user's own id). With
   * `senderChat` the message is sent on behalf of a chat, as Telegram sends an anonymous group admin's
   * (the group itself, from GroupAnonymousBot) or a post as a channel (the channel, from Channel_Bot).
   */
  sendText(
    chatId: number,
    user: { id: number; first_name: string },
    text: string,
    senderChat?: { id: number; type: string; title: string },
  ): void;
  /** The next call of `method` fails as Telegram fails it for a chat the bot may not write to. */
  failNext(method: string): void;
  close(): Promise<void>;
}

export async function startFakeTelegram(): Promise<FakeTelegram> {
  const calls: BotApiCall[] = [];
  const updates: { update_id: number; message: Record<string, unknown> }[] = [];
  const waiting = new Set<() => void>();
  const failing = new Set<string>();
  let updateId = 1000;
  let messageId = 1;
  const now = () => Math.floor(Date.now() / 1000);

  const server: FakeHttpServer = await startFakeHttpServer(async (req: RecordedRequest, res) => {
    const [, token, method] = /^\/bot([^/]+)\/(\w+)$/.exec(req.path) ?? [];
    if (token !== BOT_TOKEN) return sendJson(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const { params, file } = parametersOf(req);
    const result = (value: unknown) => sendJson(res, 200, { ok: true, result: value });
    if (method === 'getUpdates') {
      const offset = Number(params.offset ?? 0);
      const pending = () => updates.filter((u) => u.update_id >= offset).slice(0, Number(params.limit ?? 100));
      if (pending().length === 0 && Number(params.timeout ?? 0) > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => done(), Number(params.timeout) * 1000);
          const done = () => {
            clearTimeout(timer);
            waiting.delete(done);
            resolve();
          };
          waiting.add(done);
        });
      }
      return result(pending());
    }
    calls.push({ method: method!, params, ...(file ? { file } : {}) });
    if (failing.delete(method!))
      return sendJson(res, 403, { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' });
    const chat = { id: Number(params.chat_id), type: Number(params.chat_id) > 0 ? 'private' : 'group' };
    switch (method) {
      case 'getMe':
        return result(BOT);
      case 'deleteWebhook':
      case 'sendChatAction':
      case 'setMyCommands':
        return result(true);
      case 'sendMessage':
        if (!params.text) return sendJson(res, 400, { ok: false, error_code: 400, description: 'Bad Request: message text is empty' });
        if (visibleLength(String(params.text)) > 4096) {
          return sendJson(res, 400, { ok: false, error_code: 400, description: 'Bad Request: message is too long' });
        }
        return result({ message_id: messageId++, from: BOT, chat, date: now(), text: params.text });
      case 'sendDocument':
        if (!file)
          return sendJson(res, 400, { ok: false, error_code: 400, description: 'Bad Request: there is no document in the request' });
        if (visibleLength(String(params.caption ?? '')) > 1024) {
          return sendJson(res, 400, { ok: false, error_code: 400, description: 'Bad Request: message caption is too long' });
        }
        return result({
          message_id: messageId++,
          from: BOT,
          chat,
          date: now(),
          document: { file_id: `doc-${messageId}`, file_unique_id: `u-${messageId}`, file_name: file.name },
          caption: params.caption,
        });
      default:
        return sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found: method not found' });
    }
  });

  return {
    apiRoot: server.url,
    calls,
    sendText(chatId, user, text, senderChat) {
      const command = /^\/\w+/.exec(text)?.[0];
      updates.push({
        update_id: updateId++,
        message: {
          message_id: messageId++,
          from: { ...user, is_bot: false },
          chat:
            chatId === user.id
              ? { id: chatId, type: 'private', first_name: user.first_name }
              : { id: chatId, type: 'group', title: 'Sales' },
          ...(senderChat ? { sender_chat: senderChat } : {}),
          date: now(),
          text,
          ...(command ? { entities: [{ type: 'bot_command', offset: 0, length: command.length }] } : {}),
        },
      });
      for (const wake of [...waiting]) wake();
    },
    failNext(method) {
      failing.add(method);
    },
    close: () => server.close(),
  };
}

/** Text length as Telegram limits it: after HTML parsing (tags gone, entities one character each). */
function visibleLength(html: string): number {
  return html.replace(/<[^>]+>/g, '').replace(/&(?:lt|gt|amp|quot|#\d+);/g, '_').length;
}

/** JSON parameters, or a multipart form's fields and its one file. */
function parametersOf(req: RecordedRequest): { params: Record<string, unknown>; file?: { name: string; content: string } } {
  const type = String(req.headers['content-type'] ?? '');
  const boundary = /^multipart\/form-data;\s*boundary=(.+)$/.exec(type)?.[1];
  if (!boundary) return { params: typeof req.body === 'object' && req.body ? req.body : {} };
  // Parsed by hand: grammY writes `content-disposition:form-data;name="chat_id"` and an unquoted
  // filename, which Telegram takes and undici's strict FormData parser refuses.
  const params: Record<string, unknown> = {};
  let file: { name: string; content: string } | undefined;
  for (const part of String(req.body).split(`--${boundary}`).slice(1, -1)) {
    const [head = '', ...rest] = part.replace(/^\r\n/, '').split('\r\n\r\n');
    const content = rest.join('\r\n\r\n').replace(/\r\n$/, '');
    const name = /name="?([^";\r\n]+)"?/.exec(head)?.[1];
    const filename = /filename="?([^";\r\n]+)"?/.exec(head)?.[1];
    if (filename) file = { name: filename, content };
    else if (name) params[name] = content;
  }
  return { params, ...(file ? { file } : {}) };
}
