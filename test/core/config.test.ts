import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../services/config/config.js';

describe('loadConfig', () => {
  it('when nothing is set, then the embedded local defaults apply', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 8080,
      host: '127.0.0.1',
      DATA_DIR: './.data',
      localAuth: true,
      answerBackend: 'none',
      MEMORY_MAX_HISTORY_MESSAGES: 10,
      MEMORY_SEMANTIC_SEARCH_K: 3,
      MEMORY_MAX_CONTEXT_TOKENS: 4000,
      MEMORY_AUGMENTATION: 'instructions',
      memoryTtlMs: 7 * 86_400_000,
      embeddingsModel: 'local-hash-v1',
      embeddingsDimensions: 384,
    });
  });

  it('when a JWT setting is given, then it listens on all interfaces', () => {
    expect(loadConfig({ JWT_SECRET: 's'.repeat(32) }).host).toBe('0.0.0.0');
  });

  it('when values are invalid, then one error names every bad variable', () => {
    try {
      loadConfig({ PORT: '99999', MEMORY_AUGMENTATION: 'magic', MEMORY_TTL: 'soon' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(/PORT/);
      expect((err as Error).message).toMatch(/MEMORY_AUGMENTATION/);
      expect((err as Error).message).toMatch(/MEMORY_TTL/);
    }
  });

  it.each([
    [{ NODE_ENV: 'production' }, /JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL/],
    [{ JWT_SECRET: 's'.repeat(32), JWT_JWKS_URL: 'https://idp/jwks' }, /exactly one/],
    [{ ANSWER_BACKEND: 'upstream' }, /ANSWER_URL/],
    [{ ANSWER_URL: 'http://x/answerQuestion', ANSWER_AUTH: 'basic' }, /ANSWER_BASIC_USER/],
    [{ ANSWER_URL: 'http://x/answerQuestion', ANSWER_AUTH: 'bearer' }, /ANSWER_BEARER_TOKEN/],
    [{ LLM_PROVIDER: 'openai', LLM_MODEL: 'm' }, /OPENAI_API_KEY/],
    [{ LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'k' }, /LLM_MODEL/],
    [{ EMBEDDINGS_DIMENSIONS: '4096' }, /EMBEDDINGS_DIMENSIONS/],
    [{ JWT_SECRET: 'short' }, /JWT_SECRET/],
  ])('when %j, then the error says %s', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('when a value is an empty string, then it counts as unset', () => {
    expect(loadConfig({ PORT: '', ANSWER_URL: '' }).PORT).toBe(8080);
  });
});
