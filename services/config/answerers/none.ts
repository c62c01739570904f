import type { AnswererSettings } from './answerer-settings.js';

/** ANSWER_BACKEND=none: the memory API alone; /memoryChat has nothing to ask. */
export const noneAnswererSettings: AnswererSettings = {
  check() {},
  defaultAuth: 'none',
  defaultMaxContextTokens: 4000,
  forwardsCallers: false,
};
