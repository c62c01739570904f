// The Telegram bot of examples/telegram-bot against a local Bot API (getUpdates long polling,
// sendMessage, sendDocument: test/examples/support/fake-telegram.ts) and the real service with a
// fake answerer.
import type { Bot } from 'grammy';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTelegramBot, memorychatUser, sessionKey } from '../../examples/telegram-bot/src/bot.js';
import { sendJson } from '../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../support/service/service-with-upstream.js';
import type { TestApp } from '../support/service/test-app.js';
import { BOT_TOKEN, type BotApiCall, type FakeTelegram, startFakeTelegram } from './support/fake-telegram.js';
import { createBotApiKey, warmUp } from './support/service-for-bots.js';

const ALICE = { id: 7001, first_name: 'Alice' };
const BOB = { id: 7002, first_name: 'Bob' };

describe('the Telegram bot example', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let telegram: FakeTelegram;
  let bot: Bot;
  let polling: Promise<void>;
  /** Reads the bot's users' memory as the bot does: a key of the bot's namespace. */
  let reader: string;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
    await warmUp(t);
    telegram = await startFakeTelegram();
    bot = createTelegramBot({
      token: BOT_TOKEN,
      apiRoot: telegram.apiRoot,
      // The routes examples/telegram-bot/README.md tells an admin to allow.
      memorychat: {
        url: t.baseUrl,
        apiKey: await createBotApiKey(t, 'telegram-bot', 'telegram:', [
          'memoryChat',
          'listSessions',
          'getTurnResultCsv',
          'clearSession',
          'deleteSession',
        ]),
      },
    });
    reader = await createBotApiKey(t, 'telegram-reader', 'telegram:', ['listSessions', 'getSession']);
    await new Promise<void>((resolve) => {
      polling = bot.start({ onStart: () => resolve() });
    });
  });
  afterAll(async () => {
    await bot?.stop();
    await polling;
    await telegram?.close();
    await stopServiceWithUpstream({ t, upstream });
  });

  /** What the user writes, and the bot's next reply (sendMessage or sendDocument) in that chat. */
  const say = async (
    chatId: number,
    user: typeof ALICE,
    text: string,
    senderChat?: { id: number; type: string; title: string },
  ): Promise<BotApiCall> => {
    const since = telegram.calls.length;
    telegram.sendText(chatId, user, text, senderChat);
    return vi.waitFor(
      () => {
        const reply = telegram.calls
          .slice(since)
          .find((c) => (c.method === 'sendMessage' || c.method === 'sendDocument') && Number(c.params.chat_id) === chatId);
        if (!reply) throw new Error(`no reply to ${text} yet`);
        return reply;
      },
      { timeout: 25_000, interval: 50 },
    );
  };
  const asUser = (id: number) => ({ 'x-api-key': reader, 'x-memory-user': memorychatUser({ from: { id }, chat: { id } }) });
  const sessionOf = async (user: typeof ALICE, chatId: number) => {
    const found = await t.request('GET', `/sessions?key=${encodeURIComponent(sessionKey(chatId))}`, {
      headers: asUser(user.id),
    });
    return found.body.sessions[0];
  };

  it('when a user asks a question and a follow-up in a chat, then both are answered from one conversation of that chat', async () => {
    const first = await say(ALICE.id, ALICE, 'Show me total sales by region for 2024');
    expect(first.params).toMatchObject({ text: 'Total sales by region for 2024: EMEA 100, AMER 200.', parse_mode: 'HTML' });
    const followUp = await say(ALICE.id, ALICE, 'What about 2023?');
    expect(followUp.params.text).toBe('Total sales by region for 2023: EMEA 100, AMER 200.');
    expect(JSON.stringify(upstream.lastBody())).toContain('Show me total sales by region for 2024');
    expect(await sessionOf(ALICE, ALICE.id)).toMatchObject({ session_key: `telegram:${ALICE.id}`, message_count: 2 });
  });

  it('when the user sends /sql and /csv, then the SQL comes as code and the data as a CSV document, both from memory', async () => {
    const chat = -100_200;
    await say(chat, BOB, 'Total sales by region for 2022');
    await say(chat, BOB, 'Total sales by region for 2021');
    const upstreamCalls = upstream.requests.length;

    const last = await say(chat, BOB, '/sql');
    expect(last.params.text).toBe(
      'The SQL for <i>Total sales by region for 2021</i>:\n<pre><code class="language-sql">SELECT region, SUM(amount) FROM sales WHERE year = 2021 GROUP BY region</code></pre>',
    );
    const first = await say(chat, BOB, '/sql first');
    expect(first.params.text).toContain('WHERE year = 2022');
    const byNumber = await say(chat, BOB, '/sql 2');
    expect(byNumber.params.text).toContain('WHERE year = 2021');

    const csv = await say(chat, BOB, '/csv first');
    expect(csv.method).toBe('sendDocument');
    expect(csv.file).toEqual({ name: 'question-1.csv', content: 'region\nEMEA\n' });
    expect(csv.params).toMatchObject({
      chat_id: String(chat),
      caption: 'The data of <i>Total sales by region for 2022</i>',
      parse_mode: 'HTML',
    });
    expect(upstream.requests.length).toBe(upstreamCalls);
  });

  it('when a result is larger than the service sends inline, then /csv fetches it from the turn and sends it whole', async () => {
    const rows = Array.from({ length: 600 }, (_, i) => [{ columnName: 'customer', value: `customer number ${i}` }]);
    upstream.handle((req, res) =>
      sendJson(res, 200, {
        ...salesReply(String(req.body.question)),
        execution_result: Object.fromEntries(rows.map((row, i) => [`Row ${i + 1}`, row])),
      }),
    );
    try {
      const chat = -100_300;
      await say(chat, BOB, 'List every customer for 2024');
      const csv = await say(chat, BOB, '/csv');
      expect(csv.method).toBe('sendDocument');
      expect(csv.file!.content.length).toBeGreaterThan(8 * 1024);
      expect(csv.file!.content.split('\n').slice(0, 2)).toEqual(['customer', 'customer number 0']);
      expect(csv.file!.content.trimEnd().split('\n')).toHaveLength(601);
    } finally {
      upstream.handle((req, res) =>
        sendJson(res, 200, salesReply(String(req.body?.question ?? ''), String(req.body?.custom_instructions ?? ''))),
      );
    }
  });

  it('when an answer is longer than a Telegram message, then it comes in several messages, in order', async () => {
    const chat = -100_350;
    const answer = Array.from({ length: 900 }, (_, i) => `Region ${i} sold <${i * 7}> & more.`).join('\n');
    upstream.handle((req, res) => sendJson(res, 200, { ...salesReply(String(req.body.question)), answer }));
    try {
      const since = telegram.calls.length;
      await say(chat, BOB, 'Sales by every region for 2024');
      // Parts are sent as HTML: counting their escaped length would stop waiting before the last part.
      const unescapedParts = () =>
        telegram.calls
          .slice(since)
          .filter((c) => c.method === 'sendMessage')
          .map((c) => String(c.params.text).replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'));
      const parts = await vi.waitFor(
        () => {
          const sent = unescapedParts();
          if (sent.join('\n').length < answer.length) throw new Error('not all parts yet');
          return sent;
        },
        { timeout: 25_000, interval: 50 },
      );
      expect(parts.length).toBeGreaterThan(1);
      expect(parts.join('\n')).toBe(answer);
    } finally {
      upstream.handle((req, res) =>
        sendJson(res, 200, salesReply(String(req.body?.question ?? ''), String(req.body?.custom_instructions ?? ''))),
      );
    }
  });

  it('when the user sends /clear, then the chat continues in an emptied conversation, and /forget deletes it', async () => {
    const chat = -100_400;
    await say(chat, ALICE, 'Total sales by region for 2020');
    const before = await sessionOf(ALICE, chat);

    const cleared = await say(chat, ALICE, '/clear');
    expect(cleared.params.text).toBe('Cleared: the next question starts a fresh conversation in this chat.');
    expect(await sessionOf(ALICE, chat)).toMatchObject({ session_id: before.session_id, message_count: 0 });
    await say(chat, ALICE, 'What about 2019?');
    expect(JSON.stringify(upstream.lastBody())).not.toContain('Total sales by region for 2020');

    const forgotten = await say(chat, ALICE, '/forget');
    expect(forgotten.params.text).toBe('Forgotten: this chat’s conversation is deleted from memory.');
    expect(await sessionOf(ALICE, chat)).toBeUndefined();
    const gone = await t.request('GET', `/sessions/${before.session_id}`, { headers: asUser(ALICE.id) });
    expect(gone.status).toBe(404);
  });

  it('when the user sends /forget, then the conversation no longer comes back as a similar question in another chat', async () => {
    const question = 'Which warehouse shipped the most parcels to Iceland in 2014?';
    const recalledIn = async (chat: number) => {
      await say(chat, ALICE, question);
      return JSON.stringify(upstream.lastBody().custom_instructions ?? '');
    };
    await say(-100_700, ALICE, question);
    // Without /forget, the user's other chat recalls it: the check below can fail.
    expect(await recalledIn(-100_701)).toContain(question);

    await say(-100_700, ALICE, '/forget');
    await say(-100_701, ALICE, '/forget');
    expect(await recalledIn(-100_702)).not.toContain(question);
  });

  it('when two users write in the same group, then each has a conversation of their own', async () => {
    const chat = -100_500;
    await say(chat, ALICE, 'Total sales by region for 2018');
    await say(chat, BOB, 'Total sales by region for 2017');
    expect((await sessionOf(ALICE, chat)).message_count).toBe(1);
    expect((await sessionOf(BOB, chat)).message_count).toBe(1);
    expect((await sessionOf(ALICE, chat)).session_id).not.toBe((await sessionOf(BOB, chat)).session_id);
  });

  it("when an anonymous admin asks in each of two groups, or a channel posts in both, then neither group recalls the other's questions", async () => {
    // Telegram's stand-in senders, the same in every group (issue 39: group B recalled group A's secret).
    const anonymousAdmin = { id: 1087968824, first_name: 'Group' };
    const channelBot = { id: 136817688, first_name: 'Channel' };
    const groupA = { id: -100_800, type: 'supergroup', title: 'Board' };
    const groupB = { id: -100_801, type: 'supergroup', title: 'Everyone' };
    const channel = { id: -100_900, type: 'channel', title: 'News' };
    const secret = 'What is the acquisition budget of Project Falcon for 2025?';
    const probe = 'What is the acquisition budget for 2025?';
    const bodyAfter = async (chat: number, user: typeof ALICE, senderChat: typeof groupA) => {
      await say(chat, user, probe, senderChat);
      return JSON.stringify(upstream.lastBody());
    };

    for (const [sender, speaksForA, speaksForB] of [
      [anonymousAdmin, groupA, groupB],
      [channelBot, channel, channel],
    ] as const) {
      await say(groupA.id, sender, secret, speaksForA);
      expect(await bodyAfter(groupB.id, sender, speaksForB), sender.first_name).not.toContain('Project Falcon');
      // The same sender in group A does recall it: the check above can fail.
      expect(await bodyAfter(groupA.id, sender, speaksForA), sender.first_name).toContain('Project Falcon');
      await say(groupA.id, sender, '/forget', speaksForA);
    }
    const users = [
      memorychatUser({ from: anonymousAdmin, chat: groupA, sender_chat: groupA }),
      memorychatUser({ from: channelBot, chat: groupB, sender_chat: channel }),
    ];
    expect(users).toEqual(['telegram:chat:-100800:as:-100800', 'telegram:chat:-100801:as:-100900']);
  });

  it('when sending a reply fails, then the bot keeps polling and answers the next message', async () => {
    const chat = -100_600;
    telegram.failNext('sendMessage');
    const failed = await say(chat, BOB, 'Total sales by region for 2016');
    expect(failed.params.text).toBe('Total sales by region for 2016: EMEA 100, AMER 200.');
    const next = await say(chat, BOB, 'What about 2015?');
    expect(next.params.text).toBe('Total sales by region for 2015: EMEA 100, AMER 200.');
  });
});
