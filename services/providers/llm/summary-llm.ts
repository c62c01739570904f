import type { Config } from '../../config/config.js';
import { createAnthropicChat } from './anthropic-chat.js';
import type { ChatLlm } from './chat-llm.js';
import { createOpenAIChat } from './openai-chat.js';

/** The LLM for session summaries (SUMMARY_PROVIDER/SUMMARY_MODEL), or undefined for the extractive summary. */
export function createSummaryLlm(config: Config): ChatLlm | undefined {
  const options = { model: config.SUMMARY_MODEL!, timeoutMs: config.LLM_TIMEOUT_MS };
  if (config.SUMMARY_PROVIDER === 'openai') {
    return createOpenAIChat({ ...options, apiKey: config.OPENAI_API_KEY!, baseURL: config.OPENAI_BASE_URL });
  }
  if (config.SUMMARY_PROVIDER === 'anthropic') {
    return createAnthropicChat({ ...options, apiKey: config.ANTHROPIC_API_KEY!, baseURL: config.ANTHROPIC_BASE_URL });
  }
  return undefined;
}
