import Type, { type Static } from 'typebox';
import { ConfigError } from '../config-error.js';

/** Embeddings and LLMs: the vectors of stored turns and the models that write SQL, rewrites and summaries. */
export const ModelsSchema = Type.Object({
  EMBEDDINGS_PROVIDER: Type.Union([Type.Literal('local'), Type.Literal('openai')], { default: 'local' }),
  EMBEDDINGS_MODEL: Type.Optional(Type.String({ minLength: 1 })),
  // Vectors stay inline in the 8 KB turn row (docs/design.md §9), so they are capped well below a page.
  EMBEDDINGS_DIMENSIONS: Type.Optional(Type.Integer({ minimum: 16, maximum: 1536 })),
  LLM_PROVIDER: Type.Optional(Type.Union([Type.Literal('openai'), Type.Literal('anthropic')])),
  LLM_MODEL: Type.Optional(Type.String({ minLength: 1 })),
  LLM_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 30_000 }),
  OPENAI_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  OPENAI_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  ANTHROPIC_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
});

export type ModelsVariables = Static<typeof ModelsSchema>;

/**
 * The local embedder's name (providers/embeddings/local-embedder.ts): a new one for every change to
 * its features, so that stored turns are re-embedded. Retired names are refused with that provider.
 */
export const LOCAL_MODEL = 'local-hash-v2';
/** Before each character of a Chinese, Japanese or Korean run became a word of its own. */
const RETIRED_LOCAL_MODELS = ['local-hash-v1'];
const DEFAULT_MODELS = { local: LOCAL_MODEL, openai: 'text-embedding-3-small' } as const;
const DEFAULT_DIMENSIONS = { local: 384, openai: 1536 } as const;

export function deriveModels(raw: ModelsVariables) {
  if (raw.EMBEDDINGS_PROVIDER === 'openai' && !raw.OPENAI_API_KEY) {
    throw new ConfigError('OPENAI_API_KEY: required when EMBEDDINGS_PROVIDER=openai');
  }
  if (raw.LLM_PROVIDER === 'openai' && !raw.OPENAI_API_KEY) {
    throw new ConfigError('OPENAI_API_KEY: required when LLM_PROVIDER=openai');
  }
  if (raw.LLM_PROVIDER === 'anthropic' && !raw.ANTHROPIC_API_KEY) {
    throw new ConfigError('ANTHROPIC_API_KEY: required when LLM_PROVIDER=anthropic');
  }
  if (raw.LLM_PROVIDER && !raw.LLM_MODEL) {
    throw new ConfigError('LLM_MODEL: required when LLM_PROVIDER is set');
  }
  if (raw.EMBEDDINGS_PROVIDER === 'local' && raw.EMBEDDINGS_MODEL && RETIRED_LOCAL_MODELS.includes(raw.EMBEDDINGS_MODEL)) {
    // Its vectors are no longer what the local embedder computes: new ones under the old name would
    // be compared with stored ones that differ.
    throw new ConfigError(
      `EMBEDDINGS_MODEL: ${raw.EMBEDDINGS_MODEL} was replaced by ${LOCAL_MODEL}; unset EMBEDDINGS_MODEL or set ${LOCAL_MODEL} (stored turns are re-embedded at start)`,
    );
  }
  return {
    embeddingsModel: raw.EMBEDDINGS_MODEL ?? DEFAULT_MODELS[raw.EMBEDDINGS_PROVIDER],
    embeddingsDimensions: raw.EMBEDDINGS_DIMENSIONS ?? DEFAULT_DIMENSIONS[raw.EMBEDDINGS_PROVIDER],
  };
}
