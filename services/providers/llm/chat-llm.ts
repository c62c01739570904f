/** A single-shot text completion, used for question rewriting (and later summaries). */
export interface ChatLlm {
  readonly name: string;
  complete(request: { system: string; user: string; maxTokens: number }): Promise<string>;
}
