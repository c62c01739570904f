import Type, { type Static } from 'typebox';
import { Value } from 'typebox/value';
import { DURATION_PATTERN, parseDurationMs } from './duration.js';

/**
 * Every environment variable the service reads, in one schema. Nothing else reads `process.env`:
 * entry points call `loadConfig(process.env)` once and pass the result down.
 */
export const ConfigSchema = Type.Object({
  NODE_ENV: Type.String({ default: 'development' }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  DATA_DIR: Type.String({ minLength: 1, default: './.data' }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 1_048_576 }),

  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 200, default: 10 }),

  JWT_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  JWT_PUBLIC_KEY: Type.Optional(Type.String({ pattern: '-----BEGIN [A-Z ]*PUBLIC KEY-----' })),
  JWT_JWKS_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  JWT_ISSUER: Type.Optional(Type.String({ minLength: 1 })),
  JWT_AUDIENCE: Type.Optional(Type.String({ minLength: 1 })),
  JWT_USER_CLAIM: Type.String({ minLength: 1, default: 'sub' }),
  JWT_TENANT_CLAIM: Type.String({ minLength: 1, default: 'tenant' }),
  JWT_ROLES_CLAIM: Type.String({ minLength: 1, default: 'roles' }),
  JWT_DATABASES_CLAIM: Type.Optional(Type.String({ minLength: 1 })),

  MEMORY_MAX_QUESTION_CHARS: Type.Integer({ minimum: 1, maximum: 100_000, default: 4000 }),
  MEMORY_MAX_HISTORY_MESSAGES: Type.Integer({ minimum: 0, maximum: 200, default: 10 }),
  MEMORY_SEMANTIC_SEARCH_K: Type.Integer({ minimum: 0, maximum: 50, default: 3 }),
  MEMORY_MIN_SIMILARITY: Type.Number({ minimum: -1, maximum: 1, default: 0.25 }),
  MEMORY_MAX_CONTEXT_TOKENS: Type.Integer({ minimum: 0, maximum: 200_000, default: 4000 }),
  MEMORY_AUGMENTATION: Type.Union([Type.Literal('instructions'), Type.Literal('inline'), Type.Literal('rewrite')], {
    default: 'instructions',
  }),
  MEMORY_TTL: Type.String({ pattern: DURATION_PATTERN, default: '7d' }),
  MEMORY_TTL_MODE: Type.Union([Type.Literal('sliding'), Type.Literal('absolute')], { default: 'sliding' }),

  ANSWER_BACKEND: Type.Optional(Type.Union([Type.Literal('upstream'), Type.Literal('sql'), Type.Literal('none')])),
  ANSWER_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  ANSWER_AUTH: Type.Union(
    [Type.Literal('forward'), Type.Literal('basic'), Type.Literal('bearer'), Type.Literal('none')],
    { default: 'none' },
  ),
  ANSWER_BASIC_USER: Type.Optional(Type.String()),
  ANSWER_BASIC_PASSWORD: Type.Optional(Type.String()),
  ANSWER_BEARER_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  ANSWER_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 120_000 }),

  EMBEDDINGS_PROVIDER: Type.Union([Type.Literal('local'), Type.Literal('openai')], { default: 'local' }),
  EMBEDDINGS_MODEL: Type.Optional(Type.String({ minLength: 1 })),
  // Vectors stay inline in the 8 KB turn row (DESIGN §9), so they are capped well below a page.
  EMBEDDINGS_DIMENSIONS: Type.Optional(Type.Integer({ minimum: 16, maximum: 1536 })),

  LLM_PROVIDER: Type.Optional(Type.Union([Type.Literal('openai'), Type.Literal('anthropic')])),
  LLM_MODEL: Type.Optional(Type.String({ minLength: 1 })),
  LLM_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 30_000 }),
  OPENAI_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  OPENAI_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  ANTHROPIC_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
});

export type RawConfig = Static<typeof ConfigSchema>;

export type Config = RawConfig & {
  isProduction: boolean;
  /** No JWT setting outside production: listen on loopback, sign with a secret kept under DATA_DIR. */
  localAuth: boolean;
  host: string;
  memoryTtlMs: number;
  answerBackend: 'upstream' | 'none';
  embeddingsModel: string;
  embeddingsDimensions: number;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const DEFAULT_MODELS = { local: 'local-hash-v1', openai: 'text-embedding-3-small' } as const;
const DEFAULT_DIMENSIONS = { local: 384, openai: 1536 } as const;

/** Validates the environment once; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const known = Object.keys(ConfigSchema.properties);
  // Empty strings mean "unset", as in most .env tooling.
  const input: Record<string, unknown> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const converted = Value.Default(ConfigSchema, Value.Convert(ConfigSchema, input));
  if (!Value.Check(ConfigSchema, converted)) {
    const problems = [...Value.Errors(ConfigSchema, converted)].map((e) => {
      const name = e.instancePath.replace(/^\//, '') || String((e.params as { requiredProperties?: string[] })?.requiredProperties ?? '');
      return `${name}: ${e.message} (got ${JSON.stringify(input[name] ?? null)})`;
    });
    throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const raw = converted as RawConfig;
  return deriveConfig(raw);
}

function deriveConfig(raw: RawConfig): Config {
  const isProduction = raw.NODE_ENV === 'production';
  const jwtSources = [raw.JWT_SECRET, raw.JWT_PUBLIC_KEY, raw.JWT_JWKS_URL].filter(Boolean).length;
  if (jwtSources > 1) {
    throw new ConfigError('JWT_SECRET, JWT_PUBLIC_KEY and JWT_JWKS_URL: set exactly one of them');
  }
  if (jwtSources === 0 && isProduction) {
    throw new ConfigError(
      'JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL: one is required when NODE_ENV=production',
    );
  }
  const localAuth = jwtSources === 0;

  let answerBackend = raw.ANSWER_BACKEND ?? (raw.ANSWER_URL ? 'upstream' : 'none');
  if (answerBackend === 'sql') {
    throw new ConfigError('ANSWER_BACKEND: "sql" (the built-in text-to-SQL answerer) is not available yet; use "upstream"');
  }
  if (answerBackend === 'upstream' && !raw.ANSWER_URL) {
    throw new ConfigError('ANSWER_URL: required when ANSWER_BACKEND=upstream');
  }
  if (raw.ANSWER_AUTH === 'basic' && (!raw.ANSWER_BASIC_USER || raw.ANSWER_BASIC_PASSWORD === undefined)) {
    throw new ConfigError('ANSWER_BASIC_USER and ANSWER_BASIC_PASSWORD: required when ANSWER_AUTH=basic');
  }
  if (raw.ANSWER_AUTH === 'bearer' && !raw.ANSWER_BEARER_TOKEN) {
    throw new ConfigError('ANSWER_BEARER_TOKEN: required when ANSWER_AUTH=bearer');
  }
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

  return {
    ...raw,
    isProduction,
    localAuth,
    host: raw.HOST ?? (localAuth ? '127.0.0.1' : '0.0.0.0'),
    memoryTtlMs: parseDurationMs(raw.MEMORY_TTL),
    answerBackend,
    embeddingsModel: raw.EMBEDDINGS_MODEL ?? DEFAULT_MODELS[raw.EMBEDDINGS_PROVIDER],
    embeddingsDimensions: raw.EMBEDDINGS_DIMENSIONS ?? DEFAULT_DIMENSIONS[raw.EMBEDDINGS_PROVIDER],
  };
}
