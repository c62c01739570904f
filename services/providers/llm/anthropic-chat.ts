import { type ChatLlm, jsonOrText, type TokenUsage } from './chat-llm.js';
import { anthropicClient } from './sdk-clients.js';

export function createAnthropicChat(options: { apiKey: string; baseURL?: string; model: string; timeoutMs: number }): ChatLlm {
  const client = anthropicClient({ apiKey: options.apiKey, baseURL: options.baseURL, timeout: options.timeoutMs, maxRetries: 1 });
  return {
    name: `anthropic:${options.model}`,
    async complete({ system, user, maxTokens }) {
      const response = await (await client()).messages.create({
        model: options.model,
        max_tokens: maxTokens,
        system,
        messages: [{ role: 'user', content: user }],
      });
      return {
        text: response.content
          .flatMap((block) => (block.type === 'text' ? [block.text] : []))
          .join('')
          .trim(),
        usage: anthropicUsage(response.usage),
      };
    },
    // Anthropic's structured output is a tool the model is made to call; its input is the object.
    async completeStructured({ system, user, maxTokens, output }) {
      const response = await (await client()).messages.create({
        model: options.model,
        max_tokens: maxTokens,
        system,
        messages: [{ role: 'user', content: user }],
        tools: [{ name: output.name, description: output.description, input_schema: { type: 'object', ...output.schema } }],
        tool_choice: { type: 'tool', name: output.name },
      });
      const call = response.content.find((block) => block.type === 'tool_use' && block.name === output.name);
      if (call?.type === 'tool_use') return { value: call.input, usage: anthropicUsage(response.usage) };
      const text = response.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
      return { value: jsonOrText(text.trim()), usage: anthropicUsage(response.usage) };
    },
  };
}

function anthropicUsage(usage: { input_tokens: number; output_tokens: number }): TokenUsage {
  return { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens };
}
