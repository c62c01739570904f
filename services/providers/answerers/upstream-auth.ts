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
