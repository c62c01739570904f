import { ConfigError } from '../config-error.js';
import type { AnswererSettings } from './answerer-settings.js';

/** ANSWER_BACKEND=upstream: a Denodo-AI-SDK-compatible answerQuestion at ANSWER_URL (docs/denodo-ai-sdk.md). */
export const upstreamAnswererSettings: AnswererSettings = {
  check(raw) {
    if (!raw.ANSWER_URL) throw new ConfigError('ANSWER_URL: required when ANSWER_BACKEND=upstream');
  },
  // Each caller's Denodo credentials, so VDP applies each user's permissions.
  defaultAuth: 'forward',
  // The Denodo AI SDK sends custom_instructions, and so the memory block, in about four LLM prompts per question.
  defaultMaxContextTokens: 2000,
  forwardsCallers: true,
};
