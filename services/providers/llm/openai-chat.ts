import OpenAI from 'openai';
import type { ChatLlm } from './chat-llm.js';

export function createOpenAIChat(options: { apiKey: string; baseURL?: string; model: string; timeoutMs: number }): ChatLlm {
  const client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL, timeout: options.timeoutMs, maxRetries: 1 });
  return {
    name: `openai:${options.model}`,
    async complete({ system, user, maxTokens }) {
      const response = await client.chat.completions.create({
        model: options.model,
        max_completion_tokens: maxTokens,
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ],
      });
      return response.choices[0]?.message?.content?.trim() ?? '';
    },
  };
}
