import type { Config } from '../../config/config.js';
import { createAnthropicChat } from './anthropic-chat.js';
import type { ChatLlm } from './chat-llm.js';
import { createOpenAIChat } from './openai-chat.js';

export type { ChatLlm } from './chat-llm.js';

/** The LLM for question rewriting, or undefined when LLM_PROVIDER is not set. */
export function createChatLlm(config: Config): ChatLlm | undefined {
  if (config.LLM_PROVIDER === 'openai') {
    return createOpenAIChat({
      apiKey: config.OPENAI_API_KEY!,
      baseURL: config.OPENAI_BASE_URL,
      model: config.LLM_MODEL!,
      timeoutMs: config.LLM_TIMEOUT_MS,
    });
  }
  if (config.LLM_PROVIDER === 'anthropic') {
    return createAnthropicChat({
      apiKey: config.ANTHROPIC_API_KEY!,
      baseURL: config.ANTHROPIC_BASE_URL,
      model: config.LLM_MODEL!,
      timeoutMs: config.LLM_TIMEOUT_MS,
    });
  }
  return undefined;
}
