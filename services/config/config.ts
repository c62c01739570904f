import Type, { type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import type { AnswerBackend } from '../model/answer-backends.js';
import { deriveAnswerer } from './answerers/index.js';
import { ConfigError } from './config-error.js';
import { AccountLinkingSchema, type AccountLinkingSettings, deriveAccountLinking } from './groups/account-linking.js';
import { BackgroundSchema, deriveBackground } from './groups/background.js';
import { DatabaseSchema } from './groups/database.js';
import { deriveGdpr, GdprSchema } from './groups/gdpr.js';
import { deriveIdempotency, IdempotencySchema } from './groups/idempotency.js';
import { deriveIdentity, IdentitySchema } from './groups/identity.js';
import { deriveMemory, MemorySchema } from './groups/memory.js';
import { deriveModels, ModelsSchema } from './groups/models.js';
import { derivePrivacy, PrivacySchema } from './groups/privacy.js';
import { deriveRollout, RolloutSchema } from './groups/rollout.js';
import { ServerSchema } from './groups/server.js';
import { SqlAnswererSchema } from './groups/sql-answerer.js';
import { deriveTracing, TracingSchema } from './groups/tracing.js';
import { deriveUpstreamAnswerer, UpstreamAnswererSchema } from './groups/upstream-answerer.js';
import type { CustomPiiPattern } from './pii-patterns.js';

export { LOCAL_MODEL } from './groups/models.js';
export type { AccountLinkingSettings };
export { ConfigError };

/**
 * Every environment variable the service reads, in one schema made of a group per concern
 * (services/config/groups/, in the order and with the names of docs/configuration.md's tables), each
 * group with the values it derives. Each answer backend's checks and defaults are its own
 * (services/config/answerers/). Nothing else reads `process.env`: entry points call
 * `loadConfig(process.env)` once and pass the result down.
 */
export const ConfigSchema = Type.Object({
  ...ServerSchema.properties,
  ...DatabaseSchema.properties,
  ...IdentitySchema.properties,
  ...MemorySchema.properties,
  ...RolloutSchema.properties,
  ...PrivacySchema.properties,
  ...TracingSchema.properties,
  ...UpstreamAnswererSchema.properties,
  ...AccountLinkingSchema.properties,
  ...SqlAnswererSchema.properties,
  ...ModelsSchema.properties,
  ...BackgroundSchema.properties,
  ...GdprSchema.properties,
  ...IdempotencySchema.properties,
});

export type RawConfig = Static<typeof ConfigSchema>;

export type Config = RawConfig & {
  /** MEMORY_MAX_CONTEXT_TOKENS, or its default for the answerer. */
  MEMORY_MAX_CONTEXT_TOKENS: number;
  isProduction: boolean;
  /** No JWT setting outside production: listen on loopback, sign with a secret kept under DATA_DIR. */
  localAuth: boolean;
  /** Serve the memory playground (PLAYGROUND, by default on in local mode). */
  playground: boolean;
  host: string;
  memoryTtlMs: number;
  jwksCacheTtlMs: number;
  jwtMaxAgeMs?: number;
  cleanupIntervalMs: number;
  gdprExportTtlMs: number;
  eraseReclaimWindowMs: number;
  accessAuditRetentionMs: number;
  idempotencyTtlMs: number;
  idempotencyClaimLeaseMs: number;
  viewPermissionsTtlMs: number;
  answerBackend: AnswerBackend;
  /** The schemas the sql answerer shows the LLM (SQL_SCHEMAS, or the demo's). */
  sqlSchemas: string[];
  sqlTables?: string[];
  sqlSchemaRefreshMs: number;
  sqlMaxPlanCost?: number;
  /** ANSWER_AUTH, or its default: `forward` with an upstream answerer. */
  answerAuth: 'forward' | 'basic' | 'bearer' | 'none';
  /** Each caller's credentials go upstream (ANSWER_AUTH=forward with an answerer that sends them). */
  forwardsCallerCredentials: boolean;
  /** ACCOUNT_LINK_*: set when account linking is on (docs/account-linking.md). */
  accountLinking?: AccountLinkingSettings;
  piiMode: 'off' | 'mask' | 'hash';
  piiPatterns: CustomPiiPattern[];
  rolloutTenantPercent: Map<string, number>;
  tracingEnabled: boolean;
  embeddingsModel: string;
  embeddingsDimensions: number;
};

/** Settings that are refused rather than ignored, because a deployment setting them expects what they did. */
const RETIRED_SETTINGS: Record<string, string> = {
  ANSWER_STREAM_URL:
    "no longer used: a streamed /memoryChat asks ANSWER_URL and streams its answer, because the Denodo AI SDK's " +
    '/streamAnswerQuestion computes the whole answer first and streams its text without the SQL, tables and tokens the ' +
    'stored turn needs (docs/denodo-ai-sdk.md#streaming); remove the setting',
};

/** Validates the environment once; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  for (const [name, why] of Object.entries(RETIRED_SETTINGS)) {
    if (env[name]) throw new ConfigError(`${name}: ${why}`);
  }
  const known = Object.keys(ConfigSchema.properties);
  // Empty strings mean "unset", as in most .env tooling.
  const input: Record<string, unknown> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const converted = Value.Default(ConfigSchema, Value.Convert(ConfigSchema, input));
  if (!Value.Check(ConfigSchema, converted)) {
    throw new ConfigError(`invalid configuration:\n  ${configProblems(converted as Record<string, unknown>, input).join('\n  ')}`);
  }
  const raw = converted as RawConfig;
  return deriveConfig(raw);
}

/**
 * One line per invalid variable. TypeBox reports a union of literals once per literal ("must be equal
 * to constant", three times for three values), so such a variable is told its allowed values instead.
 */
function configProblems(converted: Record<string, unknown>, input: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [name, schema] of Object.entries(ConfigSchema.properties) as [string, TSchema][]) {
    const value = converted[name];
    if (value === undefined || Value.Check(schema, value)) continue;
    const allowed = allowedValues(schema);
    const message = allowed ? `must be one of ${allowed.join(', ')}` : ([...Value.Errors(schema, value)][0]?.message ?? 'is invalid');
    problems.push(`${name}: ${message} (got ${JSON.stringify(input[name] ?? null)})`);
  }
  return problems;
}

function allowedValues(schema: TSchema): string[] | undefined {
  const variants = (schema as { anyOf?: { const?: unknown }[] }).anyOf;
  if (!variants?.every((v) => v.const !== undefined)) return undefined;
  return variants.map((v) => String(v.const));
}

/** Each group's checks and derived values, in the order docs/configuration.md lists them. */
function deriveConfig(raw: RawConfig): Config {
  const isProduction = raw.NODE_ENV === 'production';
  const identity = deriveIdentity(raw);
  const answerer = deriveAnswerer(raw);
  const models = deriveModels(raw);
  const background = deriveBackground(raw);
  const idempotency = deriveIdempotency(raw);
  return {
    ...raw,
    isProduction,
    ...identity,
    ...derivePrivacy(raw),
    ...deriveRollout(raw),
    ...deriveTracing(raw),
    ...deriveMemory(raw),
    ...background,
    ...deriveGdpr(raw),
    ...idempotency,
    ...answerer,
    ...deriveUpstreamAnswerer(raw),
    ...deriveAccountLinking(raw, isProduction),
    ...models,
  };
}
