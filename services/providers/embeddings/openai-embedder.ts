import { openAIClient } from '../llm/sdk-clients.js';
import { type Embedder, l2Normalise } from './embedder.js';

export interface OpenAIEmbedderOptions {
  apiKey: string;
  baseURL?: string;
  model: string;
  dimensions: number;
  /** Send `dimensions` to the API (text-embedding-3-*); older models reject it. */
  requestDimensions: boolean;
  timeoutMs: number;
}

/** Embeddings from the OpenAI API or any compatible server at OPENAI_BASE_URL. */
export function createOpenAIEmbedder(options: OpenAIEmbedderOptions): Embedder {
  const client = openAIClient({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    timeout: options.timeoutMs,
    maxRetries: 2,
  });
  return {
    modelId: `${options.model}@${options.dimensions}`,
    dimensions: options.dimensions,
    async embed(texts) {
      const nonEmpty = texts.map((t) => t.trim());
      const wanted = nonEmpty.flatMap((t, i) => (t ? [i] : []));
      const out: (number[] | null)[] = texts.map(() => null);
      if (wanted.length === 0) return out;
      const response = await (await client()).embeddings.create({
        model: options.model,
        input: wanted.map((i) => nonEmpty[i]!),
        ...(options.requestDimensions ? { dimensions: options.dimensions } : {}),
        encoding_format: 'float',
      });
      for (const item of response.data) {
        if (item.embedding.length !== options.dimensions) {
          throw new Error(
            `embedding model ${options.model} returned ${item.embedding.length} dimensions, ` +
              `EMBEDDINGS_DIMENSIONS is ${options.dimensions}`,
          );
        }
        out[wanted[item.index]!] = l2Normalise(item.embedding);
      }
      return out;
    },
  };
}
