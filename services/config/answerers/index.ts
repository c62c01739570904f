import type { AnswerBackend } from '../../model/answer-backends.js';
import { checkUpstreamAuth } from '../groups/upstream-answerer.js';
import type { AnswererSettings, AnswererVariables } from './answerer-settings.js';
import { noneAnswererSettings } from './none.js';
import { deriveSqlAnswerer, sqlAnswererSettings } from './sql.js';
import { upstreamAnswererSettings } from './upstream.js';

/** Each answer backend's checks and defaults: a backend added to ANSWER_BACKENDS does not compile without its own. */
export const ANSWERER_SETTINGS: Record<AnswerBackend, AnswererSettings> = {
  upstream: upstreamAnswererSettings,
  sql: sqlAnswererSettings,
  none: noneAnswererSettings,
};

/** ANSWER_BACKEND (unset: `upstream` with an ANSWER_URL, `none` otherwise), checked, with its backend's defaults. */
export function deriveAnswerer(raw: AnswererVariables) {
  const answerBackend: AnswerBackend = raw.ANSWER_BACKEND ?? (raw.ANSWER_URL ? 'upstream' : 'none');
  const settings = ANSWERER_SETTINGS[answerBackend];
  settings.check(raw);
  checkUpstreamAuth(raw);
  const answerAuth = raw.ANSWER_AUTH ?? settings.defaultAuth;
  return {
    answerBackend,
    /** ANSWER_AUTH, or its backend's default. */
    answerAuth,
    /** Each caller's credentials go upstream: ANSWER_AUTH=forward with a backend that sends them. */
    forwardsCallerCredentials: settings.forwardsCallers && answerAuth === 'forward',
    /** MEMORY_MAX_CONTEXT_TOKENS, or its backend's default. */
    MEMORY_MAX_CONTEXT_TOKENS: raw.MEMORY_MAX_CONTEXT_TOKENS ?? settings.defaultMaxContextTokens,
    ...deriveSqlAnswerer(raw),
  };
}
