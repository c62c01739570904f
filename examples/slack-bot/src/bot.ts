import { App, HTTPReceiver, type LogLevel } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import { ask } from './ask.js';
import { refusingOutsideWindow, SeenEvents } from './delivery.js';
import { type MemorychatSettings, memorychatFor } from './memorychat-auth.js';

export interface SlackBotSettings {
  /** Basic Information → Signing Secret: every event request is checked against it. */
  signingSecret: string;
  /** OAuth & Permissions → Bot User OAuth Token (xoxb-…). */
  botToken: string;
  /** Slack's Web API; only changed to point the bot at a local stand-in. */
  slackApiUrl?: string;
  logLevel?: LogLevel;
  memorychat: MemorychatSettings;
}

interface Message {
  team: string | undefined;
  user: string;
  channel: string;
  /** The thread's first message: a top-level message starts its own thread. */
  threadTs: string;
  text: string;
}

/**
 * A Bolt app (HTTP receiver, events at /slack/events) that answers in threads, one memorychat
 * conversation per thread. It answers a mention anywhere, every direct message, and a later
 * message in a thread where its author already has a conversation with the bot (a follow-up
 * needs no mention). Each event is answered once: a request dated more than five minutes from the
 * bot's clock either way is refused, and a retry or replay of an event already taken in (the same
 * event_id) is dropped (delivery.ts).
 */
export function createSlackBot(settings: SlackBotSettings): App {
  const receiver = new HTTPReceiver({ signingSecret: settings.signingSecret, logLevel: settings.logLevel });
  receiver.requestListener = refusingOutsideWindow(receiver.requestListener);
  const app = new App({
    token: settings.botToken,
    receiver,
    logLevel: settings.logLevel,
    ...(settings.slackApiUrl ? { clientOptions: { slackApiUrl: settings.slackApiUrl } } : {}),
  });

  const seen = new SeenEvents();
  app.use(async ({ body, context, logger, next }) => {
    const eventId = (body as { event_id?: unknown }).event_id;
    if (typeof eventId === 'string' && !seen.firstDelivery(eventId)) {
      logger.debug(`event ${eventId} already taken in (retry ${context.retryNum ?? 'none'}): dropped`);
      return;
    }
    await next();
  });

  app.event('app_mention', async ({ event, context, client }) => {
    if (!event.user) return;
    await answer(client, settings.memorychat, {
      team: context.teamId,
      user: event.user,
      channel: event.channel,
      threadTs: event.thread_ts ?? event.ts,
      text: event.text.replace(/<@[A-Z0-9]+>/g, '').trim(),
    });
  });

  app.message(async ({ message, context, client }) => {
    // Edits, joins and bots' own messages have a subtype; a mention is answered as app_mention.
    if (message.subtype !== undefined || !message.text) return;
    if (context.botUserId && message.text.includes(`<@${context.botUserId}>`)) return;
    const incoming = {
      team: context.teamId,
      user: message.user,
      channel: message.channel,
      threadTs: message.thread_ts ?? message.ts,
      text: message.text,
    };
    if (message.channel_type === 'im') return answer(client, settings.memorychat, incoming);
    if (message.thread_ts && (await hasConversation(settings.memorychat, incoming))) {
      return answer(client, settings.memorychat, incoming);
    }
  });

  return app;
}

/** The memorychat user a Slack user is: Slack's user ids are unique within a workspace (team). */
export function memorychatUser(message: Pick<Message, 'team' | 'user'>): string {
  return `slack:${message.team ?? 'workspace'}:${message.user}`;
}

/** One conversation per thread. */
export function sessionKey(message: Pick<Message, 'channel' | 'threadTs'>): string {
  return `slack:${message.channel}:${message.threadTs}`;
}

async function answer(client: WebClient, memorychat: MemorychatSettings, message: Message): Promise<void> {
  if (!message.text) return;
  const reply = await ask(memorychatFor(memorychat, memorychatUser(message)), message.text, sessionKey(message), memorychat.memoryScope);
  if (reply.private) {
    await client.chat.postEphemeral({ channel: message.channel, user: message.user, thread_ts: message.threadTs, text: reply.text });
    return;
  }
  if (reply.csv) {
    // Slack's upload flow: files.getUploadURLExternal, the bytes to that URL, files.completeUploadExternal.
    await client.files.uploadV2({
      channel_id: message.channel,
      thread_ts: message.threadTs,
      initial_comment: reply.text,
      filename: reply.csv.filename,
      title: reply.csv.filename,
      file: Buffer.from(reply.csv.content),
    });
    return;
  }
  await client.chat.postMessage({ channel: message.channel, thread_ts: message.threadTs, text: reply.text });
}

/** Whether the author of a thread message talked to the bot in this thread (lookup only: reads never create). */
async function hasConversation(memorychat: MemorychatSettings, message: Message): Promise<boolean> {
  const { data } = await memorychatFor(memorychat, memorychatUser(message)).GET('/sessions', {
    params: { query: { key: sessionKey(message) } },
  });
  return (data?.sessions.length ?? 0) > 0;
}
