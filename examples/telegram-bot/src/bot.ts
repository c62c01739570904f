import { Bot, type Context, InputFile } from 'grammy';
import type { MemorychatClient } from 'memorychat-client';
import { ask } from './ask.js';
import { type MemorychatSettings, memorychatFor } from './memorychat-auth.js';

export interface TelegramBotSettings {
  /** From @BotFather. */
  token: string;
  /** The Bot API; only changed to point the bot at a local stand-in or a self-hosted Bot API server. */
  apiRoot?: string;
  memorychat: MemorychatSettings;
}

export const COMMANDS = [
  { command: 'sql', description: 'the SQL of the last answer (or: /sql first, /sql 2, /sql android)' },
  { command: 'csv', description: 'the data of the last answer as a CSV file (same choices as /sql)' },
  { command: 'clear', description: 'start afresh in this chat (the conversation is emptied)' },
  { command: 'forget', description: 'delete this chat’s conversation from memory' },
];

const HELP = [
  'Ask me a question about your data; follow-up questions know what we talked about in this chat.',
  ...COMMANDS.map(({ command, description }) => `/${command}: ${description}`),
].join('\n');

/**
 * A grammY bot with one memorychat conversation per chat (session key `telegram:<chat id>`), each
 * Telegram user's memory their own (anonymous senders: one memory per chat, memorychatUser). Plain messages are questions; /sql, /csv, /clear and /forget
 * act on the conversation.
 */
export function createTelegramBot(settings: TelegramBotSettings): Bot {
  const bot = new Bot(settings.token, settings.apiRoot ? { client: { apiRoot: settings.apiRoot } } : {});
  const memorychat = (ctx: Context) => memorychatFor(settings.memorychat, memorychatUser({ ...ctx.msg!, chat: ctx.chat! }));
  const answer = (ctx: Context, question: string) => answerIn(ctx, memorychat(ctx), question, settings.memorychat.memoryScope);

  bot.command(['start', 'help'], (ctx) => ctx.reply(HELP));
  bot.command('sql', (ctx) => answer(ctx, `show me the SQL${which(ctx.match)}`));
  bot.command('csv', (ctx) => answer(ctx, `export that as CSV${which(ctx.match)}`));
  bot.command('clear', async (ctx) => {
    const session = await sessionOfChat(memorychat(ctx), ctx.chat.id);
    if (session) await memorychat(ctx).POST('/sessions/{id}/clear', { params: { path: { id: session } } });
    await ctx.reply('Cleared: the next question starts a fresh conversation in this chat.');
  });
  bot.command('forget', async (ctx) => {
    const session = await sessionOfChat(memorychat(ctx), ctx.chat.id);
    if (session) await memorychat(ctx).DELETE('/sessions/{id}', { params: { path: { id: session } } });
    await ctx.reply('Forgotten: this chat’s conversation is deleted from memory.');
  });
  bot.on('message:text', (ctx) => answer(ctx, ctx.msg.text));
  // Without a handler grammY stops polling at the first error: one failed reply must not end the bot.
  bot.catch(({ error, ctx }) => console.error(`update ${ctx.update.update_id} failed:`, error));
  return bot;
}

/**
 * Who sends a message anonymously: an anonymous group admin's messages come from GroupAnonymousBot,
 * posts made as a channel from Channel_Bot, in every group alike.
 */
const ANONYMOUS_SENDERS = new Set([1087968824, 136817688]);

interface Sender {
  from?: { id: number };
  chat: { id: number };
  /** The chat a message speaks for: the group itself (an anonymous admin) or a channel. */
  sender_chat?: { id: number };
}

/**
 * The memorychat user who wrote a message. Telegram's user ids are global, so a person is one user
 * in every chat. A message sent on behalf of a chat has a stand-in sender shared by every group on
 * Telegram: it is one user per chat it is written in and chat it speaks for, so an anonymous admin
 * of one group never recalls another group's questions. All within the key's namespace `telegram:`.
 */
export function memorychatUser(message: Sender): string {
  if (message.sender_chat || !message.from || ANONYMOUS_SENDERS.has(message.from.id)) {
    return `telegram:chat:${message.chat.id}:as:${message.sender_chat?.id ?? 'anonymous'}`;
  }
  return `telegram:${message.from.id}`;
}

/** One conversation per chat. */
export function sessionKey(chatId: number): string {
  return `telegram:${chatId}`;
}

/** "/sql 2" means question 2; "/sql first" or "/sql android" name it as the memory command would. */
function which(argument: string): string {
  const words = argument.trim();
  if (!words) return '';
  return /^\d+$/.test(words) ? ` for question ${words}` : ` for the ${words} question`;
}

async function answerIn(ctx: Context, memorychat: MemorychatClient, question: string, memoryScope?: 'session' | 'user'): Promise<void> {
  await ctx.replyWithChatAction('typing');
  const reply = await ask(memorychat, question, sessionKey(ctx.chat!.id), memoryScope);
  if ('signIn' in reply) return sendSignIn(ctx, reply.signIn);
  if ('csv' in reply) {
    await ctx.replyWithDocument(new InputFile(Buffer.from(reply.csv.content), reply.csv.filename), {
      caption: reply.caption,
      parse_mode: 'HTML',
    });
    return;
  }
  for (const message of reply.messages) await ctx.reply(message, { parse_mode: 'HTML' });
}

/**
 * The sign-in link goes to the user's private chat with the bot, never to a group, where someone else
 * could open it first. A user who never started a private chat cannot be written to (Telegram's 403):
 * the group is told how to get the link.
 */
async function sendSignIn(ctx: Context, html: string): Promise<void> {
  if (ctx.chat!.type === 'private') {
    await ctx.reply(html, { parse_mode: 'HTML' });
    return;
  }
  try {
    await ctx.api.sendMessage(ctx.from!.id, html, { parse_mode: 'HTML' });
    await ctx.reply('I need you to sign in to Denodo first: I sent you a link in our private chat.');
  } catch {
    await ctx.reply('I need you to sign in to Denodo first: open a private chat with me, say /start, then ask again.');
  }
}

async function sessionOfChat(memorychat: MemorychatClient, chatId: number): Promise<string | undefined> {
  const { data } = await memorychat.GET('/sessions', { params: { query: { key: sessionKey(chatId) } } });
  return data?.sessions[0]?.session_id;
}
