import type { Config } from '../../config/config.js';

/** The credentials ANSWER_AUTH sends the Denodo AI SDK: each caller's own (forward), the service's, or none. */
export interface UpstreamCredentials {
  auth: 'forward' | 'basic' | 'bearer' | 'none';
  basicUser?: string;
  basicPassword?: string;
  bearerToken?: string;
}

export function upstreamCredentials(
  config: Pick<Config, 'answerAuth' | 'ANSWER_BASIC_USER' | 'ANSWER_BASIC_PASSWORD' | 'ANSWER_BEARER_TOKEN'>,
): UpstreamCredentials {
  return {
    auth: config.answerAuth,
    basicUser: config.ANSWER_BASIC_USER,
    basicPassword: config.ANSWER_BASIC_PASSWORD,
    bearerToken: config.ANSWER_BEARER_TOKEN,
  };
}

/**
 * The Authorization header for one upstream call: the caller's X-Upstream-Authorization with `forward`
 * (undefined when they sent none: each caller says what that means), the service's own otherwise.
 */
export function upstreamAuthorization(credentials: UpstreamCredentials, forwarded: string | undefined): string | undefined {
  switch (credentials.auth) {
    case 'forward':
      return forwarded;
    case 'basic':
      return `Basic ${Buffer.from(`${credentials.basicUser}:${credentials.basicPassword}`).toString('base64')}`;
    case 'bearer':
      return `Bearer ${credentials.bearerToken}`;
    case 'none':
      return undefined;
  }
}

/**
 * What ANSWER_AUTH means for the Denodo AI SDK, logged at start: the SDK refuses every call without
 * credentials, and it reads views with the permissions VDP gives the credentials it receives.
 */
export function answerAuthNotice(auth: 'forward' | 'basic' | 'bearer' | 'none'): { level: 'info' | 'warn'; message: string } {
  switch (auth) {
    case 'forward':
      return {
        level: 'info',
        message:
          "ANSWER_AUTH=forward: each caller's X-Upstream-Authorization goes to the answering backend, so Denodo applies each user's own view permissions",
      };
    case 'basic':
    case 'bearer':
      return {
        level: 'warn',
        message: `ANSWER_AUTH=${auth}: every user reaches the answering backend as one Denodo identity and sees what it may see; ANSWER_AUTH=forward keeps per-user VDP permissions`,
      };
    case 'none':
      return {
        level: 'warn',
        message:
          "ANSWER_AUTH=none: no credentials are sent; the Denodo AI SDK answers 401 to every call without them (ANSWER_AUTH=forward sends each caller's)",
      };
  }
}
