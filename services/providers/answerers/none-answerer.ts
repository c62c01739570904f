import { AppError } from '../../model/errors.js';
import type { Answerer } from './answerer.js';

export const noneAnswerer: Answerer = {
  kind: 'none',
  async answer() {
    throw new AppError(
      'answerer-not-configured',
      'POST /memoryChat needs an answering backend. Set ANSWER_URL to a Denodo-AI-SDK-compatible /answerQuestion endpoint: ' +
        'with ANSWER_URL alone every caller sends its own Denodo credentials in X-Upstream-Authorization (ANSWER_AUTH=forward, ' +
        'so VDP applies the permissions of each user), or signs in once through POST /me/account-link when ACCOUNT_LINK_ISSUER is set; ' +
        'ANSWER_AUTH=basic or bearer sends one identity for everyone. Or set ANSWER_BACKEND=sql with SQL_DATABASE_URL and ' +
        'LLM_PROVIDER. The memory API works without one.',
    );
  },
};
