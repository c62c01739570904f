import type { Config } from '../config/config.js';
import { type AnswererParts, createAnswerer } from './answerers/index.js';
import { createEmbedder } from './embeddings/index.js';
import { createChatLlm } from './llm/index.js';

/** The external systems the API talks to, as configured. */
export function createProviders(config: Config, parts: Omit<AnswererParts, 'llm'> = {}) {
  const llm = createChatLlm(config);
  return { embedder: createEmbedder(config), answerer: createAnswerer(config, { ...parts, llm }), llm };
}
