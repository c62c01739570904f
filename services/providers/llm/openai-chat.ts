import { type ChatLlm, jsonOrText, type TokenUsage } from './chat-llm.js';
import { openAIClient } from './sdk-clients.js';

export function createOpenAIChat(options: { apiKey: string; baseURL?: string; model: string; timeoutMs: number }): ChatLlm {
  const client = openAIClient({ apiKey: options.apiKey, baseURL: options.baseURL, timeout: options.timeoutMs, maxRetries: 1 });
  const messages = (system: string, user: string) => [
    { role: 'system' as const, content: system },
    { role: 'user' as const, content: user },
  ];
  return {
    name: `openai:${options.model}`,
    async complete({ system, user, maxTokens }) {
      const response = await (await client()).chat.completions.create({
        model: options.model,
        max_completion_tokens: maxTokens,
        messages: messages(system, user),
      });
      return { text: response.choices[0]?.message?.content?.trim() ?? '', usage: openAIUsage(response.usage) };
    },
    async completeStructured({ system, user, maxTokens, output }) {
      const response = await (await client()).chat.completions.create({
        model: options.model,
        max_completion_tokens: maxTokens,
        messages: messages(system, user),
        response_format: {
          type: 'json_schema',
          json_schema: { name: output.name, description: output.description, schema: output.schema, strict: true },
        },
      });
      const message = response.choices[0]?.message;
      if (message?.refusal) throw new Error(`the model refused: ${message.refusal}`);
      return {
        value: jsonOrText(message?.content ?? ''),
        usage: openAIUsage(response.usage),
      };
    },
  };
}

function openAIUsage(usage: { prompt_tokens?: number; completion_tokens?: number } | undefined): TokenUsage {
  return { inputTokens: usage?.prompt_tokens ?? 0, outputTokens: usage?.completion_tokens ?? 0 };
}
