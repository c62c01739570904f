import { createMemorychatClient, type MemorychatClient } from 'memorychat-client';

export interface MemorychatSettings {
  /** The service, e.g. http://127.0.0.1:8080 */
  url: string;
  /** A key from POST /admin/api-keys with act_for_users (docs/api-keys.md). */
  apiKey: string;
}

/**
 * The memorychat client that acts for one Telegram user, so each user's memory is their own. This is the
 * only place the bot authenticates: its API key in X-Api-Key, the user in X-Memory-User.
 */
export function memorychatFor(settings: MemorychatSettings, userId: string): MemorychatClient {
  const memorychat = createMemorychatClient(settings.url, settings.apiKey);
  // The client sends its credential as a Bearer token, which the service reads as a JWT (and a
  // request with both a JWT and a key is refused): the key moves to its own header.
  memorychat.use({
    onRequest({ request }) {
      request.headers.delete('authorization');
      request.headers.set('x-api-key', settings.apiKey);
      request.headers.set('x-memory-user', userId);
      return request;
    },
  });
  return memorychat;
}
