import type { Config } from '../../config/config.js';
import type { Answerer } from './answerer.js';
import { noneAnswerer } from './none-answerer.js';
import { createUpstreamAnswerer } from './upstream-answerer.js';

export type { Answer, Answerer, AnswerRequest } from './answerer.js';

export function createAnswerer(config: Config): Answerer {
  if (config.answerBackend === 'upstream') {
    return createUpstreamAnswerer({
      url: config.ANSWER_URL!,
      auth: config.ANSWER_AUTH,
      basicUser: config.ANSWER_BASIC_USER,
      basicPassword: config.ANSWER_BASIC_PASSWORD,
      bearerToken: config.ANSWER_BEARER_TOKEN,
      timeoutMs: config.ANSWER_TIMEOUT_MS,
    });
  }
  return noneAnswerer;
}
