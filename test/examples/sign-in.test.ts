// The example bots offer "sign in to Denodo" (docs/account-linking.md): the service with account
// linking on (ANSWER_AUTH=forward, ACCOUNT_LINK_*) and a real OpenID provider (oidc-provider, in
// process), the Slack and the Telegram bot against their local fakes. An unlinked user gets the
// sign-in link where only they see it; once signed in, their question goes upstream with their token.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type App, LogLevel } from '@slack/bolt';
import type { Bot } from 'grammy';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSlackBot } from '../../examples/slack-bot/src/bot.js';
import { createTelegramBot } from '../../examples/telegram-bot/src/bot.js';
import { freePort } from '../../scripts/soak/service-process.js';
import type { FakeUpstream } from '../support/fakes/fake-upstream.js';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '../support/fakes/openid-provider.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../support/service/service-with-upstream.js';
import type { TestApp } from '../support/service/test-app.js';
import { BOT_USER_ID, type FakeSlack, startFakeSlack } from './support/fake-slack.js';
import { BOT_TOKEN, type FakeTelegram, startFakeTelegram } from './support/fake-telegram.js';
import { createBotApiKey } from './support/service-for-bots.js';

const SIGNING_SECRET = 'fake-signing-secret-2c9d7e1f0a3b4c5d';
const ACCOUNTS = {
  'alice@corp.example': { password: 'alice-password', username: 'alice' },
  'bob@corp.example': { password: 'bob-password', username: 'bob' },
};
const BOB = { id: 7102, first_name: 'Bob' };
const GROUP = -100_200_300;

describe('the example bots offer "sign in to Denodo" to a user who has not linked an account', () => {
  let idp: TestOpenIdProvider;
  let upstream: FakeUpstream;
  let t: TestApp;
  let slack: FakeSlack;
  let slackBot: App;
  let eventsUrl: string;
  let telegram: FakeTelegram;
  let telegramBot: Bot;
  let polling: Promise<void>;

  beforeAll(async () => {
    const port = await freePort();
    const redirectUrl = `http://127.0.0.1:${port}/account-link/callback`;
    idp = await startTestOpenIdProvider({ accounts: ACCOUNTS, redirectUrl });
    ({ t, upstream } = await startServiceWithUpstream(
      {
        ANSWER_AUTH: 'forward',
        ACCOUNT_LINK_ISSUER: idp.issuer,
        ACCOUNT_LINK_CLIENT_ID: idp.clientId,
        ACCOUNT_LINK_CLIENT_SECRET: idp.clientSecret,
        ACCOUNT_LINK_REDIRECT_URL: redirectUrl,
        ACCOUNT_LINK_SCOPES: 'openid profile offline_access denodo',
        ACCOUNT_LINK_RESOURCE: idp.resource,
        ACCOUNT_LINK_KEYS: `bots:${Buffer.alloc(32, 7).toString('base64')}`,
      },
      { port },
    ));
    // The first /memoryChat warms the service's caches (service-for-bots.ts says why), with credentials of its own.
    const warm = await t.request('POST', '/memoryChat', {
      token: t.token('warm-up'),
      body: { question: 'Total sales for 2000?' },
      headers: { 'x-upstream-authorization': 'Basic d2FybTp1cA==' },
    });
    expect(warm.status).toBe(200);

    slack = await startFakeSlack(SIGNING_SECRET);
    slackBot = createSlackBot({
      signingSecret: SIGNING_SECRET,
      botToken: 'xoxb-fake-bot-token',
      slackApiUrl: slack.apiUrl,
      logLevel: LogLevel.ERROR,
      // examples/slack-bot/README.md's routes, with startAccountLink for linking.
      memorychat: {
        url: t.baseUrl,
        apiKey: await createBotApiKey(t, 'slack-bot', 'slack:', ['memoryChat', 'listSessions', 'getTurnResultCsv', 'startAccountLink']),
      },
    });
    const server = (await slackBot.start(0)) as Server;
    eventsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;

    telegram = await startFakeTelegram();
    telegramBot = createTelegramBot({
      token: BOT_TOKEN,
      apiRoot: telegram.apiRoot,
      memorychat: {
        url: t.baseUrl,
        apiKey: await createBotApiKey(t, 'telegram-bot', 'telegram:', [
          'memoryChat',
          'listSessions',
          'getTurnResultCsv',
          'clearSession',
          'deleteSession',
          'startAccountLink',
        ]),
      },
    });
    await new Promise<void>((resolve) => {
      polling = telegramBot.start({ onStart: () => resolve() });
    });
  });
  afterAll(async () => {
    await slackBot?.stop();
    await telegramBot?.stop();
    await polling;
    await slack?.close();
    await telegram?.close();
    await stopServiceWithUpstream({ t, upstream });
    await idp?.close();
  });

  /** The user opens the link in their browser, signs in at the provider and comes back to memorychat. */
  const signInThrough = async (link: string, account: keyof typeof ACCOUNTS) => {
    const callback = await idp.signIn(link.replaceAll('&amp;', '&'), account, ACCOUNTS[account].password);
    const page = await fetch(callback, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
  };
  const waitFor = <T>(find: () => T | undefined, what: string) =>
    vi.waitFor(
      () => {
        const found = find();
        if (!found) throw new Error(`no ${what} yet`);
        return found;
      },
      { timeout: 25_000, interval: 50 },
    );

  it('when an unlinked Slack user mentions the bot, then only they see a sign-in link, and once signed in they are answered with their own token', async () => {
    const mention = (ts: string) =>
      slack.sendEvent(eventsUrl, {
        type: 'app_mention',
        user: 'U0000ALICE',
        text: `<@${BOT_USER_ID}> Total sales by region for 2024`,
        ts,
        channel: 'C0000042',
      });
    let since = slack.calls.length;
    const upstreamCalls = upstream.requests.length;
    await mention('1700001000.000100');
    const offer = await waitFor(() => slack.calls.slice(since).find((c) => c.method === 'chat.postEphemeral'), 'ephemeral message');
    expect(offer.args).toMatchObject({ channel: 'C0000042', user: 'U0000ALICE', thread_ts: '1700001000.000100' });
    expect(offer.args.text).toMatch(
      /^:key: I answer with your own Denodo permissions\. <http:\/\/127\.0\.0\.1:\d+\/auth\?[^|>]+\|Sign in to Denodo> once/,
    );
    expect(slack.calls.slice(since).map((c) => c.method)).not.toContain('chat.postMessage');
    expect(upstream.requests.length).toBe(upstreamCalls);

    await signInThrough(/<([^|>]+)\|Sign in to Denodo>/.exec(offer.args.text!)![1]!, 'alice@corp.example');
    since = slack.calls.length;
    await mention('1700001000.000200');
    const answer = await waitFor(() => slack.calls.slice(since).find((c) => c.method === 'chat.postMessage'), 'answer');
    expect(answer.args.text).toBe('Total sales by region for 2024: EMEA 100, AMER 200.');
    expect(upstream.requests.at(-1)!.headers.authorization).toMatch(/^Bearer eyJ/);
  });

  it('when an unlinked Telegram user asks in a group, then the sign-in link goes to their private chat, and once signed in they are answered', async () => {
    let since = telegram.calls.length;
    telegram.sendText(GROUP, BOB, 'Show me total sales by region for 2023');
    const inGroup = await waitFor(
      () => telegram.calls.slice(since).find((c) => c.method === 'sendMessage' && Number(c.params.chat_id) === GROUP),
      'group reply',
    );
    expect(inGroup.params.text).toBe('I need you to sign in to Denodo first: I sent you a link in our private chat.');
    const privately = telegram.calls.slice(since).find((c) => c.method === 'sendMessage' && Number(c.params.chat_id) === BOB.id)!;
    expect(privately.params.text).toMatch(
      /^I answer with your own Denodo permissions\. <a href="http:\/\/127\.0\.0\.1:\d+\/auth\?[^"]+">Sign in to Denodo<\/a> once/,
    );
    // The link itself never reaches the group.
    expect(JSON.stringify(telegram.calls.filter((c) => Number(c.params.chat_id) === GROUP))).not.toContain('/auth?');

    await signInThrough(/<a href="([^"]+)">/.exec(String(privately.params.text))![1]!, 'bob@corp.example');
    since = telegram.calls.length;
    telegram.sendText(GROUP, BOB, 'Show me total sales by region for 2023');
    const answer = await waitFor(
      () => telegram.calls.slice(since).find((c) => c.method === 'sendMessage' && Number(c.params.chat_id) === GROUP),
      'answer',
    );
    expect(answer.params.text).toBe('Total sales by region for 2023: EMEA 100, AMER 200.');
    expect(upstream.requests.at(-1)!.headers.authorization).toMatch(/^Bearer eyJ/);
  });
});
