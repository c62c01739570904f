import type { RunContext } from './run.js';
import type { Principal } from './world.js';

export type ImpersonatedForm = 'jwt-id' | 'stored-id' | 'key-principal';

/**
 * A bot's key naming, in X-Memory-User, someone it must never act for (issue 39): a user by the id
 * their JWT carries, a key user by the id the service stores (`key-user:…`), or another key's own
 * principal (`api-key:<key id>`). Always 403 `forbidden`, and `send` scans the answer for anything of theirs.
 */
export async function keyImpersonates(run: RunContext, caller: Principal, victim: number, form: ImpersonatedForm): Promise<void> {
  if (!caller.apiKey) return;
  const target = run.principals[victim]!;
  const named =
    form === 'jwt-id'
      ? target.userId.replace(/^key-user:bot:/, '')
      : form === 'stored-id'
        ? target.userId
        : `api-key:${(target.apiKey ?? caller.apiKey).split('.')[2]}`;
  const reply = await run.client.send(caller, 'GET', '/sessions', { headers: { 'x-memory-user': named } });
  run.client.expectStatus(reply, 403, `P${caller.index}'s key naming P${victim} as ${form}`, 'forbidden');
}
