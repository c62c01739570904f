import type { MemoryDeps } from '../deps.js';
import { cutText } from '../text.js';

const SESSION_NAME_CHARS = 100;

/**
 * A new session's name, however the session comes to be (a first turn, or a session key): the name
 * asked for, or the start of the question. Masked before it is cut: a cut email is still personal data
 * (docs/privacy.md).
 */
export function newSessionName(deps: Pick<MemoryDeps, 'pii'>, naming: { sessionName?: string; question: string }): string {
  if (naming.sessionName !== undefined) return cutText(deps.pii.text(naming.sessionName), SESSION_NAME_CHARS);
  return cutText(deps.pii.text(naming.question).trim(), SESSION_NAME_CHARS);
}
