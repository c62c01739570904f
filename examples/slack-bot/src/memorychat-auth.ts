import { createMemorychatClient, type MemorychatClient } from 'memorychat-client';

export interface MemorychatSettings {
  /** The service, e.g. http://127.0.0.1:8080 */
  url: string;
  /** A key from POST /admin/api-keys with act_for_users (docs/api-keys.md). */
  apiKey: string;
  /**
   * What memory an answer uses (docs/memory-api.md): `session`, this conversation only,
   * or `user`, also the user's similar questions of other conversations; unset, the service's default.
   */
  memoryScope?: 'session' | 'user';
}

/**
 * The memorychat client that acts for one Slack user, so each user's memory is their own. This is the
 * only place the bot authenticates: its API key in X-Api-Key, the user in X-Memory-User.
 */
export function memorychatFor(settings: MemorychatSettings, userId: string): MemorychatClient {
  return createMemorychatClient(settings.url, { apiKey: settings.apiKey, user: userId });
}
