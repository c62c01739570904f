import type { Config } from '../../config/config.js';
import type { Embedder } from './embedder.js';
import { createLocalEmbedder } from './local-embedder.js';
import { createOpenAIEmbedder } from './openai-embedder.js';

export type { Embedder } from './embedder.js';

export function createEmbedder(config: Config): Embedder {
  if (config.EMBEDDINGS_PROVIDER === 'openai') {
    return createOpenAIEmbedder({
      apiKey: config.OPENAI_API_KEY!,
      baseURL: config.OPENAI_BASE_URL,
      model: config.embeddingsModel,
      dimensions: config.embeddingsDimensions,
      requestDimensions: config.EMBEDDINGS_DIMENSIONS !== undefined,
      timeoutMs: config.LLM_TIMEOUT_MS,
    });
  }
  return createLocalEmbedder(config.embeddingsModel, config.embeddingsDimensions);
}
