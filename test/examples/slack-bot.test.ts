// The Slack bot of examples/slack-bot against a local Slack (signed Events API requests in, Web API
// calls out: test/examples/support/fake-slack.ts) and the real service with a fake answerer.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type App, LogLevel } from '@slack/bolt';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSlackBot, memorychatUser, sessionKey } from '../../examples/slack-bot/src/bot.js';
import { sendJson } from '../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../support/service/service-with-upstream.js';
import type { TestApp } from '../support/service/test-app.js';
import { BOT_USER_ID, type FakeSlack, startFakeSlack, TEAM_ID, type WebApiCall } from './support/fake-slack.js';
import { createBotApiKey, warmUp } from './support/service-for-bots.js';

const SIGNING_SECRET = 'fake-signing-secret-8f14e45fceea167a';
const CHANNEL = 'C0000042';

describe('the Slack bot example', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let slack: FakeSlack;
  let bot: App;
  let eventsUrl: string;
  /** Reads the bot's users' memory as the bot does: a key of the bot's namespace. */
  let reader: string;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
    await warmUp(t);
    slack = await startFakeSlack(SIGNING_SECRET);
    bot = createSlackBot({
      signingSecret: SIGNING_SECRET,
      botToken: 'xoxb-fake-bot-token',
      slackApiUrl: slack.apiUrl,
      logLevel: LogLevel.ERROR,
      // The routes examples/slack-bot/README.md tells an admin to allow.
      memorychat: {
        url: t.baseUrl,
        apiKey: await createBotApiKey(t, 'slack-bot', 'slack:', ['memoryChat', 'listSessions', 'getTurnResultCsv']),
        // Each thread its own conversation, nothing recalled from the user's other threads.
        memoryScope: 'session',
      },
    });
    reader = await createBotApiKey(t, 'slack-reader', 'slack:', ['listSessions']);
    const server = (await bot.start(0)) as Server;
    eventsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  });
  afterAll(async () => {
    await bot?.stop();
    await slack?.close();
    await stopServiceWithUpstream({ t, upstream });
  });

  /** The bot's next Web API call of `method` after the first `since` calls. */
  const nextCall = (method: string, since: number) =>
    vi.waitFor(
      () => {
        const call = slack.calls.slice(since).find((c) => c.method === method);
        if (!call) throw new Error(`no ${method} yet`);
        return call;
      },
      { timeout: 25_000, interval: 50 },
    );

  const sessionOf = async (user: string, key: string) => {
    const found = await t.request('GET', `/sessions?key=${encodeURIComponent(key)}`, {
      headers: { 'x-api-key': reader, 'x-memory-user': user },
    });
    return found.body.sessions[0];
  };

  it('when a user mentions the bot and then follows up in the thread, then both are answered in the thread from one conversation', async () => {
    const threadTs = '1700000000.000100';
    let since = slack.calls.length;
    const mention = await slack.sendEvent(eventsUrl, {
      type: 'app_mention',
      user: 'U0000ALICE',
      text: `<@${BOT_USER_ID}> Show me total sales by region for 2024`,
      ts: threadTs,
      channel: CHANNEL,
    });
    expect(mention.status).toBe(200);
    const first: WebApiCall = await nextCall('chat.postMessage', since);
    expect(first.args).toMatchObject({
      channel: CHANNEL,
      thread_ts: threadTs,
      text: 'Total sales by region for 2024: EMEA 100, AMER 200.',
    });
    expect(upstream.lastBody().question).toBe('Show me total sales by region for 2024');

    // No mention: a follow-up in a thread where the user already talks to the bot.
    since = slack.calls.length;
    await slack.sendEvent(eventsUrl, {
      type: 'message',
      channel_type: 'channel',
      user: 'U0000ALICE',
      text: 'What about 2023?',
      ts: '1700000000.000200',
      thread_ts: threadTs,
      channel: CHANNEL,
    });
    const second = await nextCall('chat.postMessage', since);
    expect(second.args).toMatchObject({
      channel: CHANNEL,
      thread_ts: threadTs,
      text: 'Total sales by region for 2023: EMEA 100, AMER 200.',
    });
    // The follow-up went upstream with the first turn as its context.
    expect(JSON.stringify(upstream.lastBody())).toContain('Show me total sales by region for 2024');

    const user = memorychatUser({ team: TEAM_ID, user: 'U0000ALICE' });
    const session = await sessionOf(user, sessionKey({ channel: CHANNEL, threadTs }));
    expect(session).toMatchObject({ session_key: `slack:${CHANNEL}:${threadTs}`, message_count: 2 });
  });

  it('when the user asks for the SQL and then the data, then the SQL comes as a code block and the CSV as a file uploaded into the thread', async () => {
    const threadTs = '1700000100.000100';
    // Slack delivers a mention in a thread twice: as app_mention and as the channel's message event.
    const ask = async (text: string, ts: string) => {
      const event = { user: 'U00000BOB', text: `<@${BOT_USER_ID}> ${text}`, ts, thread_ts: threadTs, channel: CHANNEL };
      await slack.sendEvent(eventsUrl, { type: 'app_mention', ...event });
      await slack.sendEvent(eventsUrl, { type: 'message', channel_type: 'channel', ...event });
    };
    let since = slack.calls.length;
    await slack.sendEvent(eventsUrl, {
      type: 'app_mention',
      user: 'U00000BOB',
      text: `<@${BOT_USER_ID}> Total sales by region for 2022`,
      ts: threadTs,
      channel: CHANNEL,
    });
    await nextCall('chat.postMessage', since);

    since = slack.calls.length;
    const commandsStart = since;
    const upstreamCalls = upstream.requests.length;
    await ask('show me the SQL', '1700000100.000200');
    const sql = await nextCall('chat.postMessage', since);
    expect(sql.args.thread_ts).toBe(threadTs);
    expect(sql.args.text).toBe(
      'The SQL for _Total sales by region for 2022_:\n```\nSELECT region, SUM(amount) FROM sales WHERE year = 2022 GROUP BY region\n```',
    );

    since = slack.calls.length;
    await ask('export that as CSV', '1700000100.000300');
    const complete = await nextCall('files.completeUploadExternal', since);
    const requested = slack.calls.slice(since).find((c) => c.method === 'files.getUploadURLExternal')!;
    expect(requested.args).toMatchObject({ filename: 'question-1.csv', length: String('region\nEMEA\n'.length) });
    const [file] = JSON.parse(complete.args.files!);
    expect(slack.uploads.get(file.id)).toBe('region\nEMEA\n');
    expect(complete.args).toMatchObject({
      channel_id: CHANNEL,
      thread_ts: threadTs,
      initial_comment: 'The data of _Total sales by region for 2022_',
    });
    // Both were memory commands: answered from memory, not by the answerer.
    expect(upstream.requests.length).toBe(upstreamCalls);
    // Each was answered once, not once per event.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(slack.calls.slice(commandsStart).map((c) => c.method)).toEqual([
      'chat.postMessage',
      'files.getUploadURLExternal',
      'files.completeUploadExternal',
    ]);
  });

  it('when the bot keeps memory to the thread (memoryScope session) and a user asks the same in a new thread, then nothing of the other thread is recalled', async () => {
    const question = 'Which warehouse shipped the most parcels to Iceland in 2014?';
    const askIn = async (threadTs: string) => {
      const since = slack.calls.length;
      await slack.sendEvent(eventsUrl, {
        type: 'app_mention',
        user: 'U000DAVID',
        text: `<@${BOT_USER_ID}> ${question}`,
        ts: threadTs,
        channel: CHANNEL,
      });
      await nextCall('chat.postMessage', since);
      return upstream.lastBody();
    };
    await askIn('1700000600.000100');
    const second = await askIn('1700000700.000100');
    expect(second.question).toBe(question);
    expect(JSON.stringify(second.custom_instructions ?? '')).not.toContain(question);
  });

  it('when a user says "start over" in a thread, then the thread’s conversation is emptied and the next question starts afresh', async () => {
    const threadTs = '1700000800.000100';
    const inThread = async (text: string, ts: string) => {
      const since = slack.calls.length;
      await slack.sendEvent(eventsUrl, {
        type: 'message',
        channel_type: 'channel',
        user: 'U0000ALICE',
        text,
        ts,
        thread_ts: threadTs,
        channel: CHANNEL,
      });
      return (await nextCall('chat.postMessage', since)).args.text;
    };
    const since = slack.calls.length;
    await slack.sendEvent(eventsUrl, {
      type: 'app_mention',
      user: 'U0000ALICE',
      text: `<@${BOT_USER_ID}> Total sales by region for 2018`,
      ts: threadTs,
      channel: CHANNEL,
    });
    await nextCall('chat.postMessage', since);
    const upstreamCalls = upstream.requests.length;

    expect(await inThread('start over', '1700000800.000200')).toBe(
      'Done: I have forgotten this conversation. Ask a new question whenever you like.',
    );
    // A memory command: answered from memory, the answerer not asked.
    expect(upstream.requests.length).toBe(upstreamCalls);
    expect(await inThread('What about 2017?', '1700000800.000300')).toBe('Total sales by region for 2017: EMEA 100, AMER 200.');
    // The follow-up went upstream without the forgotten question.
    expect(JSON.stringify(upstream.lastBody())).not.toContain('2018');
  });

  it('when a message in a thread comes from someone who never talked to the bot there, then the bot stays silent', async () => {
    const since = slack.calls.length;
    const upstreamCalls = upstream.requests.length;
    await slack.sendEvent(eventsUrl, {
      type: 'message',
      channel_type: 'channel',
      user: 'U000CAROL',
      text: 'What about 2023?',
      ts: '1700000200.000200',
      thread_ts: '1700000000.000100',
      channel: CHANNEL,
    });
    // A mention by the same user afterwards is answered: the silence was a decision, not a lost event.
    await slack.sendEvent(eventsUrl, {
      type: 'app_mention',
      user: 'U000CAROL',
      text: `<@${BOT_USER_ID}> Sales for 2021?`,
      ts: '1700000200.000300',
      channel: CHANNEL,
    });
    const reply = await nextCall('chat.postMessage', since);
    expect(reply.args).toMatchObject({ thread_ts: '1700000200.000300', text: 'Total sales by region for 2021: EMEA 100, AMER 200.' });
    expect(slack.calls.slice(since).filter((c) => c.method === 'chat.postMessage')).toHaveLength(1);
    expect(upstream.requests.length).toBe(upstreamCalls + 1);
  });

  it('when a user writes to the bot directly, then it answers in a thread of that message, and a follow-up there continues it', async () => {
    const dm = 'D0000ALICE';
    let since = slack.calls.length;
    await slack.sendEvent(eventsUrl, {
      type: 'message',
      channel_type: 'im',
      user: 'U0000ALICE',
      text: 'Total sales by region for 2019',
      ts: '1700000400.000100',
      channel: dm,
    });
    expect((await nextCall('chat.postMessage', since)).args).toMatchObject({
      channel: dm,
      thread_ts: '1700000400.000100',
      text: expect.stringContaining('2019'),
    });
    since = slack.calls.length;
    await slack.sendEvent(eventsUrl, {
      type: 'message',
      channel_type: 'im',
      user: 'U0000ALICE',
      text: 'show me the SQL',
      ts: '1700000400.000200',
      thread_ts: '1700000400.000100',
      channel: dm,
    });
    expect((await nextCall('chat.postMessage', since)).args.text).toContain('WHERE year = 2019');
  });

  it('when an answer holds Slack markup such as <!channel>, then the bot escapes it instead of pinging the channel', async () => {
    upstream.handle((req, res) =>
      sendJson(res, 200, { ...salesReply(String(req.body.question)), answer: '<!channel> EMEA < AMER & <https://evil.example|click>' }),
    );
    try {
      const since = slack.calls.length;
      await slack.sendEvent(eventsUrl, {
        type: 'app_mention',
        user: 'U0000ALICE',
        text: `<@${BOT_USER_ID}> Who sold more in 2024?`,
        ts: '1700000500.000100',
        channel: CHANNEL,
      });
      expect((await nextCall('chat.postMessage', since)).args.text).toBe(
        '&lt;!channel&gt; EMEA &lt; AMER &amp; &lt;https://evil.example|click&gt;',
      );
    } finally {
      upstream.handle((req, res) =>
        sendJson(res, 200, salesReply(String(req.body?.question ?? ''), String(req.body?.custom_instructions ?? ''))),
      );
    }
  });

  it('when an event is signed with another secret, then the bot refuses it and answers nothing', async () => {
    const since = slack.calls.length;
    const forged = await slack.sendEvent(
      eventsUrl,
      { type: 'app_mention', user: 'U0000ALICE', text: `<@${BOT_USER_ID}> Sales for 2020?`, ts: '1700000300.000100', channel: CHANNEL },
      { signingSecret: 'not-the-signing-secret' },
    );
    expect(forged.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(slack.calls.slice(since)).toEqual([]);
  });

  it('when Slack retries an event or it is replayed (the same event_id), then it is answered once', async () => {
    const question = 'Which region sold the most umbrellas in 2012?';
    const event = {
      type: 'app_mention',
      user: 'U0000ALICE',
      text: `<@${BOT_USER_ID}> ${question}`,
      ts: '1700002000.000100',
      channel: CHANNEL,
    };
    let since = slack.calls.length;
    expect((await slack.sendEvent(eventsUrl, event, { eventId: 'Ev0REPLAYED' })).status).toBe(200);
    await nextCall('chat.postMessage', since);

    // The attack's replay, and Slack's own retries of the delivery: acknowledged, not answered again.
    expect((await slack.sendEvent(eventsUrl, event, { eventId: 'Ev0REPLAYED' })).status).toBe(200);
    expect((await slack.sendEvent(eventsUrl, event, { eventId: 'Ev0REPLAYED', retryNum: 1 })).status).toBe(200);
    // A retry of an event the bot never took in (it was down) is answered.
    since = slack.calls.length;
    const missed = { ...event, text: `<@${BOT_USER_ID}> Sales for 2011?`, ts: '1700002001.000100' };
    expect((await slack.sendEvent(eventsUrl, missed, { eventId: 'Ev0MISSED', retryNum: 2 })).status).toBe(200);
    expect((await nextCall('chat.postMessage', since)).args.thread_ts).toBe(missed.ts);

    expect(upstream.requests.filter((r) => r.body?.question === question)).toHaveLength(1);
    expect(slack.calls.filter((c) => c.method === 'chat.postMessage' && c.args.thread_ts === event.ts)).toHaveLength(1);
  });

  it('when a signed event is dated six minutes ahead or behind, then the bot refuses it and answers nothing', async () => {
    const since = slack.calls.length;
    const event = {
      type: 'app_mention',
      user: 'U0000ALICE',
      text: `<@${BOT_USER_ID}> Sales for 2010?`,
      ts: '1700002100.000100',
      channel: CHANNEL,
    };
    for (const offset of [6 * 60, -6 * 60]) {
      const res = await slack.sendEvent(eventsUrl, event, { timestampOffsetSec: offset });
      expect(res.status, String(offset)).toBe(401);
    }
    // Four minutes ahead is within the window: answered, and the only answer in the thread.
    await slack.sendEvent(eventsUrl, { ...event, text: `<@${BOT_USER_ID}> Sales for 2009?` }, { timestampOffsetSec: 4 * 60 });
    await nextCall('chat.postMessage', since);
    expect(
      slack.calls
        .slice(since)
        .filter((c) => c.method === 'chat.postMessage')
        .map((c) => c.args.text),
    ).toEqual(['Total sales by region for 2009: EMEA 100, AMER 200.']);
  });
});
