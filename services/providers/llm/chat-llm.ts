/** A JSON object the model must produce: a JSON schema, given to OpenAI as response_format and to Anthropic as a forced tool. */
export interface StructuredOutput {
  /** [a-zA-Z0-9_-]{1,64}: the schema's (OpenAI) or the tool's (Anthropic) name. */
  name: string;
  description: string;
  /** A JSON schema of an object, in the strict subset both providers accept (every property required, no extra ones). */
  schema: Record<string, unknown>;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** Single-shot completions: question rewriting and summaries (text), the sql answerer's SQL (structured). */
export interface ChatLlm {
  readonly name: string;
  /** The model's text, trimmed, and what the call cost. */
  complete(request: { system: string; user: string; maxTokens: number }): Promise<{ text: string; usage: TokenUsage }>;
  /**
   * The object the model produced, not yet validated beyond being JSON, and what the call cost. A
   * model that answers with text instead (no JSON, no tool call) gives that text as a string, for the
   * caller to read or refuse.
   */
  completeStructured(request: {
    system: string;
    user: string;
    maxTokens: number;
    output: StructuredOutput;
  }): Promise<{ value: unknown; usage: TokenUsage }>;
}

/** The model's text as JSON when it is JSON, else the text itself. */
export function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
