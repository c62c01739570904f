import { AppError } from '../../model/errors.js';
import type { Answerer } from './answerer.js';

export const noneAnswerer: Answerer = {
  kind: 'none',
  async answer() {
    throw new AppError(
      'answerer-not-configured',
      'POST /memoryChat needs an answering backend: set ANSWER_URL (a Denodo-AI-SDK-compatible ' +
        '/answerQuestion endpoint) and, if it needs credentials, ANSWER_AUTH; or ANSWER_BACKEND=sql with SQL_DATABASE_URL ' +
        'and LLM_PROVIDER. The memory API works without one.',
    );
  },
};
