import { expect } from 'vitest';
import type { TestApp } from '../../support/service/test-app.js';

/** An API key acting for the end users of `userNamespace`, limited to `routes`, as a tenant admin makes one for a bot (docs/api-keys.md). */
export async function createBotApiKey(t: TestApp, name: string, userNamespace: string, routes: string[]): Promise<string> {
  const admin = t.token(`${name}-admin`, { roles: ['memory-admin'] });
  const created = await t.request('POST', '/admin/api-keys', {
    token: admin,
    body: { name, act_for_users: true, user_namespace: userNamespace, routes },
  });
  expect(created.status).toBe(201);
  return created.body.api_key;
}

/**
 * The service's first /memoryChat is slow (seconds, and past 25 s with both bot files on a busy
 * machine) while its caches warm up; made here, before the bot starts, so the waits for the bot's
 * replies measure the bot.
 */
export async function warmUp(t: TestApp): Promise<void> {
  const first = await t.request('POST', '/memoryChat', { token: t.token('warm-up'), body: { question: 'Total sales for 2000?' } });
  expect(first.status).toBe(200);
}
