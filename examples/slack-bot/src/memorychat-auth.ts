import { createHmac } from 'node:crypto';
import { createMemorychatClient, type MemorychatClient } from 'memorychat-client';

export interface MemorychatSettings {
  /** The service, e.g. http://127.0.0.1:8080 */
  url: string;
  /** The service's JWT_SECRET: the bot signs a short-lived token for each Slack user it acts for. */
  jwtSecret: string;
}

const TOKEN_LIFETIME_S = 300;

/**
 * The memorychat client that acts for one Slack user, so each user's memory is their own. This is the
 * only place the bot authenticates: it mints an HS256 JWT whose subject is the user, as the service's
 * `npm run token` does (docs/configuration.md, JWT_SECRET).
 */
export function memorychatFor(settings: MemorychatSettings, userId: string): MemorychatClient {
  return createMemorychatClient(settings.url, userJwt(settings.jwtSecret, userId));
}

function userJwt(secret: string, userId: string): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const unsigned = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: userId, iat: now, exp: now + TOKEN_LIFETIME_S })}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}
