// The memory playground in a real browser (Debian's chromium, driven by playwright-core): sign in,
// chat and see the memory used, sessions with SQL and CSV, search, export and erase, by label and
// role as a keyboard or screen-reader user finds them, under the page's strict CSP.
// `npm run screenshots:playground` writes the screenshots in docs/playground/ from this run.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAYGROUND_CSP } from '../../services/api/plugins/playground.js';
import { sendJson } from '../support/fakes/fake-http-server.js';
import { salesReply, startFakeUpstream } from '../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = process.env.PLAYGROUND_SCREENSHOTS ?? mkdtempSync(path.join(tmpdir(), 'playground-shots-'));

describe('the memory playground in chromium', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let service: TestApp;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
    upstream = await startFakeUpstream();
    // As in front of the Denodo AI SDK: each user's own credentials are forwarded (the default with ANSWER_URL).
    service = await startTestApp({ ANSWER_URL: upstream.answerUrl, PLAYGROUND: 'on', ANSWER_AUTH: 'forward' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, acceptDownloads: true });
    page = await context.newPage();
    // A CSP violation or a script error is logged to the console by the browser.
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
  });

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await upstream?.close();
  });

  const shot = (name: string) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

  it('when a user signs in with a token and chats, then each answer shows the memory it used', async () => {
    // An earlier conversation, so that the first question has a similar past question to show.
    const token = service.token('playground-user');
    await service.request('POST', '/sessions/turns', {
      token,
      body: { question: 'Total sales by region for 2022', answer: 'EMEA 90, AMER 180.', sql_query: 'SELECT 2022' },
    });

    const response = await page.goto(`${service.baseUrl}/playground/`);
    expect(response?.headers()['content-security-policy']).toBe(PLAYGROUND_CSP);
    // Landmarks: a banner, the views' navigation (once signed in) and one main region.
    expect(await page.getByRole('banner').count()).toBe(1);
    expect(await page.getByRole('main').count()).toBe(1);
    await shot('sign-in');

    await page.getByLabel('Your token (JWT)').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Signed in as playground-user').first().waitFor();

    await page.getByText('Answerer credentials').click();
    await page.getByLabel('Denodo user').fill('playground-user');
    await page.getByLabel('Password').fill('secret');
    await page.getByLabel('Question', { exact: true }).fill('Show me total sales by region for 2024');
    await page.getByRole('button', { name: 'Ask' }).click();
    const first = page.locator('.exchange').first();
    await first.getByText('Total sales by region for 2024: EMEA 100, AMER 200.').waitFor();
    const similar = first.locator('table.similar tbody tr');
    expect(await similar.count()).toBe(1);
    expect(await similar.locator('td').nth(1).textContent()).toBe('Total sales by region for 2022');
    expect(Number(await similar.locator('td').first().textContent())).toBeGreaterThan(0);

    // The follow-up goes to the conversation just started (the picker selected it).
    await page.getByLabel('Question', { exact: true }).fill('What about 2023?');
    await page.getByRole('button', { name: 'Ask' }).click();
    await page.locator('.exchange').nth(1).waitFor();
    const followUp = page.locator('.exchange').first();
    await followUp.getByText('History: 1 earlier turn').waitFor();
    expect(await followUp.getByText('Turns 1 of this conversation').count()).toBe(1);
    expect(await followUp.locator('pre.sql').textContent()).toContain('year = 2023');
    // What went upstream: the question as asked, with the first turn's SQL in the instructions.
    expect(await followUp.locator('pre.augmented').textContent()).toBe('What about 2023?');
    expect(await followUp.getByText('year = 2024').count()).toBeGreaterThan(0);
    expect(await followUp.getByText('Memory context tokens').count()).toBe(1);
    expect(await followUp.getByText('Upstream tokens (in / out / total)').count()).toBe(1);
    expect(await followUp.getByText('10 / 20 / 30').count()).toBe(1);
    expect(await followUp.getByText('Memory retrieval').count()).toBe(1);
    await shot('chat');
  });

  it('when the page is reloaded, then the user is still signed in and sees sessions with their turns, SQL and CSV', async () => {
    await page.reload();
    await page.getByRole('navigation', { name: 'Views' }).getByRole('button', { name: 'Sessions' }).click();
    const rows = page.locator('#session-table tbody tr');
    await rows.nth(1).waitFor();
    expect(await rows.count()).toBe(2);

    await page.getByRole('button', { name: 'Open Show me total sales by region for 2024' }).click();
    await page.getByRole('heading', { name: 'Show me total sales by region for 2024: 2 turns' }).waitFor();
    await page.getByRole('button', { name: 'SQL of turn 2' }).click();
    await page.locator('#session-turns pre.sql', { hasText: 'year = 2023' }).waitFor();

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download the result of turn 1 as CSV' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('turn-1.csv');
    expect(readFileSync((await download.path())!, 'utf8')).toContain('EMEA');
    await shot('sessions');
  });

  it('when the user searches memory with the keyboard, then past turns come back ranked with their scores', async () => {
    await page.getByRole('button', { name: 'Search memory' }).focus();
    await page.keyboard.press('Enter');
    await page.getByLabel('Find past questions like').fill('sales by region');
    await page.keyboard.press('Enter');
    const rows = page.locator('#search-results tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(3);
    const scores = await rows.locator('td:first-child').allTextContents();
    expect(scores.map(Number)).toEqual([...scores.map(Number)].sort((a, b) => b - a));
    await shot('search');
  });

  it('when the user exports and then erases their data, then the export downloads and nothing is left, its status polled no faster than Retry-After says', async () => {
    // When the page sent each GDPR call: the 202 and each status not yet finished say to wait a second.
    const gdprCalls: number[] = [];
    const record = (request: { url(): string }) => {
      if (/\/me\/export$|\/me$|\/gdpr\/requests\/[^/]+$/.test(new URL(request.url()).pathname)) gdprCalls.push(Date.now());
    };
    page.on('request', record);
    await page.getByRole('button', { name: 'My data' }).click();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export my data' }).click()]);
    const exported = JSON.parse(readFileSync((await download.path())!, 'utf8'));
    expect(exported).toMatchObject({ format: 'memorychat-export/1', user_id: 'playground-user' });
    expect(exported.sessions).toHaveLength(2);
    await page.getByText(/^Exported /).waitFor();
    await shot('my-data');

    await page.getByRole('button', { name: 'Erase all my data…' }).click();
    await page.getByRole('button', { name: 'Yes, erase it all' }).click();
    await page.getByText('Everything of yours was erased.').waitFor();
    page.off('request', record);
    const { body } = await service.request('GET', '/sessions', { token: service.token('playground-user') });
    expect(body.sessions).toEqual([]);
    // The export's first poll after its POST, the erasure's last poll after the call before it: a second apart at least.
    expect(gdprCalls.length).toBeGreaterThanOrEqual(4);
    const firstPolls = [gdprCalls[1]! - gdprCalls[0]!, gdprCalls.at(-1)! - gdprCalls.at(-2)!];
    expect(Math.min(...firstPolls)).toBeGreaterThanOrEqual(950);
  });

  it('when a user presses Enter, then the question is sent, and a Markdown table in the answer is drawn as a table of text', async () => {
    const token = service.token('playground-user');
    // The same question asked in two earlier conversations: one row under similar questions.
    for (let i = 0; i < 2; i++) {
      await service.request('POST', '/sessions/turns', {
        token,
        body: { question: 'Which regions sold most in 2021?', answer: 'EMEA.', sql_query: 'SELECT 2021' },
      });
    }
    upstream.handle((req, res) =>
      sendJson(res, 200, {
        ...salesReply(String(req.body?.question ?? '')),
        answer: 'Sales in 2021:\n\n| Region | Total |\n| --- | ---: |\n| EMEA | 100 |\n| <img src=x onerror=alert(1)> | 200 |\n\nEMEA led.',
      }),
    );
    await page.getByRole('navigation', { name: 'Views' }).getByRole('button', { name: 'Chat' }).click();
    const question = page.getByLabel('Question', { exact: true });
    const before = await page.locator('.exchange').count();

    await question.fill('Which regions');
    await question.press('Shift+Enter');
    await question.pressSequentially('sold most in 2021?');
    expect(await question.inputValue()).toBe('Which regions\nsold most in 2021?');
    expect(await page.locator('.exchange').count()).toBe(before);

    // The user's own Denodo credentials go upstream as HTTP Basic (ANSWER_AUTH=forward keeps their permissions).
    await page.getByText('Answerer credentials').click();
    await page.getByLabel('Denodo user').fill('analyst');
    await page.getByLabel('Password').fill('pässword');
    await question.fill('Which regions sold most in 2021?');
    await question.press('Enter');
    await page.locator('.exchange').nth(before).waitFor();
    const exchange = page.locator('.exchange').first();
    const table = exchange.locator('.answer table.answer-table');
    expect(await table.locator('thead th').allTextContents()).toEqual(['Region', 'Total']);
    expect(await table.locator('tbody tr').count()).toBe(2);
    expect(await table.locator('tbody tr').nth(1).locator('td').first().textContent()).toBe('<img src=x onerror=alert(1)>');
    expect(await exchange.locator('.answer img').count()).toBe(0);
    expect(await exchange.locator('.answer p').allTextContents()).toEqual(['Sales in 2021:', 'EMEA led.']);

    expect(upstream.requests.at(-1)?.headers.authorization).toBe(`Basic ${Buffer.from('analyst:pässword').toString('base64')}`);

    const similar = exchange.locator('table.similar tbody tr');
    expect(await similar.count()).toBe(1);
    expect(await similar.locator('td').nth(1).textContent()).toBe('Which regions sold most in 2021?');
    expect((await similar.locator('td').nth(2).textContent())?.match(/turn 1 of/g)).toHaveLength(2);
  });

  it("when an admin verifies a turn of theirs, then another user's answer shows it among the tenant's verified examples", async () => {
    const admin = service.token('playground-admin', { roles: ['memory-admin'] });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Your token (JWT)').fill(admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Signed in as playground-admin').first().waitFor();
    await page.getByRole('navigation', { name: 'Views' }).getByRole('button', { name: 'Chat' }).click();
    // Each user's own Denodo credentials: the previous user's left with them.
    await page.getByText('Answerer credentials').click();
    expect(await page.getByLabel('Denodo user').inputValue()).toBe('');
    await page.getByLabel('Denodo user').fill('playground-admin');
    await page.getByLabel('Password').fill('admin-secret');
    await page.getByLabel('Question', { exact: true }).fill('How many stores opened in Porto in 2021?');
    await page.getByRole('button', { name: 'Ask' }).click();
    await page.locator('.exchange').first().getByText('Verified examples of the tenant: 0').waitFor();

    await page.getByRole('navigation', { name: 'Views' }).getByRole('button', { name: 'Sessions' }).click();
    await page.getByRole('button', { name: 'Open How many stores opened in Porto in 2021?' }).click();
    await page.getByRole('button', { name: 'Verify turn 1 for the tenant' }).click();
    await page.getByText('Turn 1 is a verified pair of the tenant').waitFor();

    // Another user of the tenant, signed in afterwards: the pair is in their answer's memory.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Your token (JWT)').fill(service.token('playground-colleague'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Signed in as playground-colleague').first().waitFor();
    // Nothing the admin saw stays in the page for the next user: their conversation, sessions, the session opened.
    expect(await page.locator('#transcript li').count()).toBe(0);
    expect(await page.locator('#session-turns li').count()).toBe(0);
    expect(await page.locator('#session-detail').isHidden()).toBe(true);
    await page.getByRole('navigation', { name: 'Views' }).getByRole('button', { name: 'Chat' }).click();
    await page.getByText('Answerer credentials').click();
    await page.getByLabel('Denodo user').fill('playground-colleague');
    await page.getByLabel('Password').fill('colleague-secret');
    await page.getByLabel('Question', { exact: true }).fill('Stores opened in Porto in 2021?');
    await page.getByRole('button', { name: 'Ask' }).click();
    const exchange = page.locator('.exchange').first();
    await exchange.getByText('Verified examples of the tenant: 1').waitFor();
    expect(await exchange.locator('ul.verified li').textContent()).toContain('How many stores opened in Porto in 2021?');
    expect(upstream.requests.at(-1)?.headers.authorization).toBe(
      `Basic ${Buffer.from('playground-colleague:colleague-secret').toString('base64')}`,
    );
    // A user who is no admin is offered no Verify button.
    await page.getByRole('navigation', { name: 'Views' }).getByRole('button', { name: 'Sessions' }).click();
    await page.getByRole('button', { name: 'Open Stores opened in Porto in 2021?' }).click();
    await page.getByRole('heading', { name: 'Stores opened in Porto in 2021?: 1 turns', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Verify turn 1 for the tenant' }).count()).toBe(0);
  });

  it('when the whole tour is over, then the browser reported no script error and no CSP violation', () => {
    expect(problems).toEqual([]);
  });
});
