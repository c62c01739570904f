import Type, { type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { ANSWER_BACKENDS, type AnswerBackend } from '../model/answer-backends.js';
import { literalUnion } from '../model/literal-union.js';
import { parseSealingKeys, readSealingKeysFile, type SealingKey } from './account-link-keys.js';
import { DURATION_PATTERN, parseDurationMs } from './duration.js';
import { type CustomPiiPattern, parseCustomPiiPatterns } from './pii-patterns.js';

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
  // Slow clients (docs/scaling.md#connections): the most time from a connection or request's start to
  // its last body byte (408 and closed past it; not the time to answer), how long a connection may idle
  // between requests, and the open connections one process accepts (0: no bound).
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 30_000 }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 72_000 }),
  MAX_CONNECTIONS: Type.Integer({ minimum: 0, default: 10_000 }),
  // Requests per minute per (tenant, user); 0 turns the limit off. Kept in Redis when REDIS_URL is set.
  RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 0, default: 120 }),
  // Requests per minute per API key, whichever users it acts for (docs/api-keys.md); 0 turns it off.
  RATE_LIMIT_PER_KEY_PER_MINUTE: Type.Integer({ minimum: 0, default: 1200 }),
  // Failed authentications (401) per minute per client address before its requests are refused (429); 0: off.
  AUTH_FAILURES_PER_MINUTE: Type.Integer({ minimum: 0, default: 30 }),
  // The reverse proxies in front of the service, so that the client address (the failed-authentication
  // throttle's key, request logs) is taken from X-Forwarded-For past them: their addresses and CIDR
  // ranges, comma-separated. Unset: the TCP peer is the client.
  TRUST_PROXY: Type.Optional(Type.String({ pattern: '^[0-9A-Fa-f.:/]+(?:\\s*,\\s*[0-9A-Fa-f.:/]+)*$' })),
  // Comma-separated origins allowed to call the API from a browser, or `*`; unset: no CORS headers.
  CORS_ORIGINS: Type.Optional(Type.String({ minLength: 1 })),
  // The service's origin as its clients reach it (https://memorychat.example.com behind a TLS proxy), where it names
  // itself: the MCP endpoint's protected-resource metadata (docs/mcp.md). Unset: each request's own scheme and Host.
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://[^/?#]+/?$' })),
  // The memory playground at /playground/ (docs/design.md); unset: on in local mode, off otherwise.
  PLAYGROUND: Type.Optional(Type.Union([Type.Literal('on'), Type.Literal('off')])),

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
  // How long keys read from JWT_JWKS_URL are trusted: a key removed from the JWKS is refused after at most this.
  JWT_JWKS_CACHE_TTL: Type.String({ pattern: DURATION_PATTERN, default: '10m' }),
  // Tokens issued (`iat`) longer ago than this are refused, whatever their `exp`; tokens without `iat` too.
  JWT_MAX_AGE: Type.Optional(Type.String({ pattern: DURATION_PATTERN })),

  MEMORY_MAX_QUESTION_CHARS: Type.Integer({ minimum: 1, maximum: 100_000, default: 4000 }),
  MEMORY_MAX_HISTORY_MESSAGES: Type.Integer({ minimum: 0, maximum: 200, default: 10 }),
  MEMORY_SEMANTIC_SEARCH_K: Type.Integer({ minimum: 0, maximum: 50, default: 3 }),
  MEMORY_MIN_SIMILARITY: Type.Number({ minimum: -1, maximum: 1, default: 0.25 }),
  // Up to this many turns a user's memory is searched exactly; past it, approximately when the user
  // holds enough of the index's rows (an IVFFlat index per embedding model, and lexical matches among the
  // newest 1,000 turns; hybrid-rank.ts, ANN_ROW_COST): docs/performance.md.
  MEMORY_EXACT_SEARCH_MAX_TURNS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 2000 }),
  // Unset: 2000 with an upstream answerer (the Denodo AI SDK sends custom_instructions, and so the
  // memory block, in about four LLM prompts per question: docs/denodo-ai-sdk.md), 4000 otherwise.
  MEMORY_MAX_CONTEXT_TOKENS: Type.Optional(Type.Integer({ minimum: 0, maximum: 200_000 })),
  MEMORY_AUGMENTATION: Type.Union([Type.Literal('instructions'), Type.Literal('inline'), Type.Literal('rewrite')], {
    default: 'instructions',
  }),
  MEMORY_TTL: Type.String({ pattern: DURATION_PATTERN, default: '7d' }),
  MEMORY_TTL_MODE: Type.Union([Type.Literal('sliding'), Type.Literal('absolute')], { default: 'sliding' }),
  // The memory API's window: older turns leave the context but stay stored until a summary covers them.
  MEMORY_MAX_TURNS_PER_SESSION: Type.Integer({ minimum: 1, maximum: 1000, default: 20 }),
  MEMORY_DEDUP_SIMILARITY: Type.Number({ minimum: 0, maximum: 1, default: 0.97 }),
  // "show me the SQL", "/clear"... typed into /memoryChat are answered from memory (docs/memory-api.md).
  MEMORY_COMMANDS: Type.Union([Type.Literal('on'), Type.Literal('off')], { default: 'on' }),
  // Turn bodies may carry base64 photos that are replaced before storage, so they get a larger limit.
  MEMORY_TURN_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 10_485_760 }),

  // Who gets memory on /memoryChat (docs/privacy.md#rollout); turns are stored for everyone unless
  // MEMORY_STORE_OUTSIDE_ROLLOUT=false.
  MEMORY_ENABLED: Type.Boolean({ default: true }),
  MEMORY_STORE_OUTSIDE_ROLLOUT: Type.Boolean({ default: true }),
  MEMORY_ROLLOUT_PERCENT: Type.Integer({ minimum: 0, maximum: 100, default: 100 }),
  // Per-tenant percentages replacing MEMORY_ROLLOUT_PERCENT: `acme=100,globex=10`.
  MEMORY_ROLLOUT_TENANTS: Type.Optional(Type.String({ pattern: '^[^=,]+=\\d{1,3}(,[^=,]+=\\d{1,3})*$' })),
  // Result rows a turn keeps (0: none; the CSV export says when rows were cut, `fresh` re-runs the SQL).
  MEMORY_STORE_RESULT_ROWS: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 10_000 }),
  // The stored result's size as JSON; fewer rows are kept to fit.
  MEMORY_STORE_RESULT_BYTES: Type.Integer({ minimum: 1024, maximum: 104_857_600, default: 1_048_576 }),
  // Each stored text (answer, SQL, explanation, question) in UTF-8 bytes; longer ones are cut with a marker.
  MEMORY_STORE_TEXT_BYTES: Type.Integer({ minimum: 1024, maximum: 104_857_600, default: 262_144 }),
  // Personal data in stored turns (docs/privacy.md): unset → `mask` in production, `off` elsewhere.
  MEMORY_PII: Type.Optional(Type.Union([Type.Literal('off'), Type.Literal('mask'), Type.Literal('hash')])),
  // The HMAC key of MEMORY_PII=hash; the same on every replica, or equal values stop linking up.
  MEMORY_PII_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  // More detectors: a JSON object of `name: regular expression`; matches read `[name]`.
  MEMORY_PII_PATTERNS: Type.Optional(Type.String({ minLength: 1 })),

  // OpenTelemetry (docs/tracing.md): on with OTEL_TRACES_EXPORTER=otlp, or with an OTLP endpoint and no exporter named.
  OTEL_TRACES_EXPORTER: Type.Optional(Type.Union([Type.Literal('otlp'), Type.Literal('none')])),
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://' })),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://' })),
  OTEL_SERVICE_NAME: Type.Optional(Type.String({ minLength: 1 })),
  // Questions, SQL and user ids go into span attributes only when this is true.
  OTEL_CAPTURE_CONTENT: Type.Boolean({ default: false }),

  ANSWER_BACKEND: Type.Optional(literalUnion(ANSWER_BACKENDS)),
  ANSWER_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  // Unset: `forward` with an upstream answerer (each caller's Denodo credentials, so VDP applies each
  // user's permissions), `none` otherwise. docs/denodo-ai-sdk.md says what each mode means.
  ANSWER_AUTH: Type.Optional(Type.Union([Type.Literal('forward'), Type.Literal('basic'), Type.Literal('bearer'), Type.Literal('none')])),
  // The most bytes read of one answerer reply (and the most a /memoryChat reply may carry): past it, 502.
  ANSWER_MAX_REPLY_BYTES: Type.Integer({ minimum: 65_536, maximum: 268_435_456, default: 16_777_216 }),
  ANSWER_BASIC_USER: Type.Optional(Type.String()),
  ANSWER_BASIC_PASSWORD: Type.Optional(Type.String()),
  ANSWER_BEARER_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  ANSWER_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 120_000 }),
  // A Denodo-AI-SDK-compatible /executeVQL, for re-running stored SQL (`result.csv?fresh=true`).
  ANSWER_EXECUTE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  // Put before every custom_instructions memorychat sends: the Denodo AI SDK 0.5 lets a request's
  // custom_instructions replace its CUSTOM_INSTRUCTIONS (newer versions merge them; leave this unset there).
  ANSWER_OPERATOR_INSTRUCTIONS: Type.Optional(Type.String({ maxLength: 20_000 })),
  // How the Denodo AI SDK takes vdp_database_names, vdp_tag_names and use_views: `list` (1.4), `comma`
  // (comma-separated strings, 0.5 to 1.2.1), or `auto`: learnt from its /openapi.json or its first 422.
  // The header memorychat's request id goes upstream in, so one question can be followed through both
  // services' logs; the Denodo AI SDK names its transaction id X-Transaction-ID. Empty: not sent.
  ANSWER_REQUEST_ID_HEADER: Type.String({ pattern: '^[A-Za-z0-9-]*$', maxLength: 100, default: 'X-Transaction-ID' }),
  ANSWER_LIST_FIELDS: Type.Union([Type.Literal('auto'), Type.Literal('list'), Type.Literal('comma')], { default: 'auto' }),
  // How long the upstream's answer about which views a credential may read is trusted before it is
  // asked again: a view revoked in Denodo leaves memory after at most this long (docs/denodo-ai-sdk.md).
  MEMORY_VIEW_PERMISSIONS_TTL: Type.String({ pattern: DURATION_PATTERN, default: '60s' }),
  // The most credentials whose view permissions are held at once; the least recently used go first.
  MEMORY_VIEW_PERMISSIONS_CACHE_ENTRIES: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10_000 }),

  // Account linking (docs/account-linking.md): a bot's user signs in once with the OpenID provider that
  // Denodo trusts, and memorychat sends that user's access token upstream when an API key acts for them.
  // On with ACCOUNT_LINK_ISSUER; the client is registered there with ACCOUNT_LINK_REDIRECT_URL.
  ACCOUNT_LINK_ISSUER: Type.Optional(Type.String({ pattern: '^https?://' })),
  ACCOUNT_LINK_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  // Unset: a public client (PKCE alone); set: client_secret_basic.
  ACCOUNT_LINK_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  // This service's /account-link/callback as the provider redirects browsers to it.
  ACCOUNT_LINK_REDIRECT_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  // Space-separated; `openid` names the subject, `offline_access` asks for a refresh token.
  ACCOUNT_LINK_SCOPES: Type.String({ minLength: 1, default: 'openid offline_access' }),
  // The resource indicator (RFC 8707) of Denodo's tokens, when the provider issues them per audience.
  ACCOUNT_LINK_RESOURCE: Type.Optional(Type.String({ minLength: 1 })),
  // The keys that seal the tokens at rest: `id:base64` (32 bytes), the first seals, all open; or a file of them.
  ACCOUNT_LINK_KEYS: Type.Optional(Type.String({ minLength: 1 })),
  ACCOUNT_LINK_KEYS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  // How long a sign-in link may be used.
  ACCOUNT_LINK_TTL: Type.String({ pattern: DURATION_PATTERN, default: '10m' }),

  // ANSWER_BACKEND=sql (docs/design.md §5): the database the LLM's SQL runs on (a read-only login is
  // required: sql-login-check.ts), or `embedded-demo` for the demo dataset in an embedded engine of its own.
  SQL_DATABASE_URL: Type.Optional(Type.String({ pattern: '^(postgres(ql)?://|embedded-demo$)' })),
  // Comma-separated schemas the LLM is shown and the SQL's search_path; default `public` (`demo` for embedded-demo).
  SQL_SCHEMAS: Type.Optional(Type.String({ pattern: '^[^,]+(,[^,]+)*$' })),
  // Comma-separated `table` or `schema.table` names: only these are shown to the LLM.
  SQL_TABLES: Type.Optional(Type.String({ pattern: '^[^,]+(,[^,]+)*$' })),
  SQL_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 15_000 }),
  // Rows kept in `execution_result`; the statement is read through a cursor, so at most one more is fetched.
  // A query the planner estimates above this cost is not run (default 20000 with embedded-demo, which cannot time out).
  SQL_MAX_PLAN_COST: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  SQL_MAX_ROWS: Type.Integer({ minimum: 1, maximum: 10_000, default: 100 }),
  // A value's text beyond this many bytes is cut (with a marker) by the database, before it is fetched.
  SQL_MAX_CELL_BYTES: Type.Integer({ minimum: 64, maximum: 10_485_760, default: 16_384 }),
  // Rows past this many bytes of values are not fetched (the reply says so).
  SQL_MAX_RESULT_BYTES: Type.Integer({ minimum: 1024, maximum: 104_857_600, default: 1_048_576 }),
  // Times the LLM may correct its SQL after the database rejected it.
  SQL_REPAIR_ATTEMPTS: Type.Integer({ minimum: 0, maximum: 3, default: 1 }),
  SQL_SCHEMA_MAX_TOKENS: Type.Integer({ minimum: 200, maximum: 100_000, default: 4000 }),
  // How old the introspected schema may get before it is read again.
  SQL_SCHEMA_REFRESH: Type.String({ pattern: DURATION_PATTERN, default: '10m' }),
  SQL_POOL_MAX: Type.Integer({ minimum: 1, maximum: 100, default: 4 }),
  // How long a statement waits for a connection (or for the demo's engine to restart) before 503 sql-database-busy.
  SQL_POOL_WAIT_MS: Type.Integer({ minimum: 1, default: 5000 }),
  // Questions one user / one tenant may have in the sql answerer at once, per API process (429 sql-queries-limited beyond).
  SQL_MAX_CONCURRENT_PER_USER: Type.Integer({ minimum: 1, default: 2 }),
  SQL_MAX_CONCURRENT_PER_TENANT: Type.Integer({ minimum: 1, default: 3 }),

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

  // Background work (docs/design.md §7). Without REDIS_URL the same processors run inside the API process.
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  // REDIS_URL names one node of a Redis Cluster; the client finds the others (docs/scaling.md#redis).
  REDIS_CLUSTER: Type.Boolean({ default: false }),
  // BullMQ key prefix: lets several deployments (or test files) share one Redis. On a Redis Cluster it
  // holds a hash tag, e.g. {memorychat}: BullMQ's scripts touch several keys of a queue at once, which
  // must be in one slot.
  QUEUE_PREFIX: Type.String({ pattern: '^[A-Za-z0-9_.{}-]+$', default: 'bull' }),
  WORKER_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 100, default: 4 }),
  // The worker's probes and /metrics; 0 picks a free port (tests).
  WORKER_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9464 }),
  JOB_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 50, default: 5 }),
  JOB_BACKOFF_MS: Type.Integer({ minimum: 1, default: 10_000 }),
  MEMORY_CLEANUP_INTERVAL: Type.String({ pattern: DURATION_PATTERN, default: '1h' }),
  MEMORY_CLEANUP_BATCH_SIZE: Type.Integer({ minimum: 1, maximum: 100_000, default: 1000 }),
  // 0 turns off summarization.
  MEMORY_SUMMARIZATION_THRESHOLD: Type.Integer({ minimum: 0, maximum: 10_000, default: 15 }),
  SUMMARY_PROVIDER: Type.Optional(Type.Union([Type.Literal('openai'), Type.Literal('anthropic')])),
  SUMMARY_MODEL: Type.Optional(Type.String({ minLength: 1 })),
  SUMMARY_MAX_INPUT_TOKENS: Type.Integer({ minimum: 500, maximum: 200_000, default: 6000 }),
  SUMMARY_MAX_TOKENS: Type.Integer({ minimum: 50, maximum: 8000, default: 600 }),
  GDPR_EXPORT_TTL: Type.String({ pattern: DURATION_PATTERN, default: '7d' }),
  // Erase requests an hour per subject and per requesting user; 0 turns the limit off (docs/configuration.md).
  GDPR_ERASE_REQUESTS_PER_HOUR: Type.Integer({ minimum: 0, default: 5 }),
  // How long the reclaim after an erase waits for other erasures to share it (docs/design.md §7).
  ERASE_RECLAIM_WINDOW: Type.String({ pattern: DURATION_PATTERN, default: '30s' }),
  // How long access-audit entries are kept; retention cleanup deletes older ones (docs/privacy.md#access-audit).
  ACCESS_AUDIT_RETENTION: Type.String({ pattern: DURATION_PATTERN, default: '400d' }),
  REEMBED_BATCH_SIZE: Type.Integer({ minimum: 1, maximum: 2048, default: 100 }),
  // Remote embedding providers only; the local embedder is not rate-limited.
  REEMBED_MAX_PER_MINUTE: Type.Integer({ minimum: 1, default: 3000 }),
  // How long a completed Idempotency-Key replays its response (docs/idempotency.md).
  IDEMPOTENCY_TTL: Type.String({ pattern: DURATION_PATTERN, default: '24h' }),
  // How long a running request's claim on its key lasts unless renewed (renewed every third of it):
  // after a crash, a retry waits at most this long before it runs.
  IDEMPOTENCY_CLAIM_LEASE: Type.String({ pattern: DURATION_PATTERN, default: '15s' }),
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
  /** ACCOUNT_LINK_*: set when account linking is on (docs/account-linking.md). */
  accountLinking?: AccountLinkingSettings;
  piiMode: 'off' | 'mask' | 'hash';
  piiPatterns: CustomPiiPattern[];
  rolloutTenantPercent: Map<string, number>;
  tracingEnabled: boolean;
  embeddingsModel: string;
  embeddingsDimensions: number;
};

/** The ACCOUNT_LINK_* settings, checked together. */
export interface AccountLinkingSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  redirectUrl: string;
  scopes: string;
  resource?: string;
  /** The first seals; every one opens. */
  keys: SealingKey[];
  linkTtlMs: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The local embedder's name (providers/embeddings/local-embedder.ts): a new one for every change to
 * its features, so that stored turns are re-embedded. Retired names are refused with that provider.
 */
export const LOCAL_MODEL = 'local-hash-v2';
/** Before each character of a Chinese, Japanese or Korean run became a word of its own. */
const RETIRED_LOCAL_MODELS = ['local-hash-v1'];
const DEFAULT_MODELS = { local: LOCAL_MODEL, openai: 'text-embedding-3-small' } as const;
const DEFAULT_DIMENSIONS = { local: 384, openai: 1536 } as const;

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

function deriveConfig(raw: RawConfig): Config {
  const isProduction = raw.NODE_ENV === 'production';
  const jwtSources = [raw.JWT_SECRET, raw.JWT_PUBLIC_KEY, raw.JWT_JWKS_URL].filter(Boolean).length;
  if (jwtSources > 1) {
    throw new ConfigError('JWT_SECRET, JWT_PUBLIC_KEY and JWT_JWKS_URL: set exactly one of them');
  }
  if (jwtSources === 0 && isProduction) {
    throw new ConfigError('JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL: one is required when NODE_ENV=production');
  }
  const localAuth = jwtSources === 0;

  const answerBackend = raw.ANSWER_BACKEND ?? (raw.ANSWER_URL ? 'upstream' : 'none');
  if (answerBackend === 'sql') checkSqlBackend(raw);
  if (answerBackend === 'upstream' && !raw.ANSWER_URL) {
    throw new ConfigError('ANSWER_URL: required when ANSWER_BACKEND=upstream');
  }
  if (raw.REDIS_CLUSTER && !raw.REDIS_URL) {
    throw new ConfigError('REDIS_URL: required when REDIS_CLUSTER=true (one node of the cluster)');
  }
  if (raw.REDIS_CLUSTER && !/\{[^{}]+\}/.test(raw.QUEUE_PREFIX)) {
    throw new ConfigError('QUEUE_PREFIX: needs a hash tag on a Redis Cluster (REDIS_CLUSTER=true), e.g. {memorychat}');
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
  if (raw.SUMMARY_PROVIDER === 'openai' && !raw.OPENAI_API_KEY) {
    throw new ConfigError('OPENAI_API_KEY: required when SUMMARY_PROVIDER=openai');
  }
  if (raw.SUMMARY_PROVIDER === 'anthropic' && !raw.ANTHROPIC_API_KEY) {
    throw new ConfigError('ANTHROPIC_API_KEY: required when SUMMARY_PROVIDER=anthropic');
  }
  if (raw.SUMMARY_PROVIDER && !raw.SUMMARY_MODEL) {
    throw new ConfigError('SUMMARY_MODEL: required when SUMMARY_PROVIDER is set');
  }
  if (raw.SUMMARY_MAX_INPUT_TOKENS < 2 * raw.SUMMARY_MAX_TOKENS + 300) {
    // The previous summary (at most SUMMARY_MAX_TOKENS) and new turns must both fit in one call.
    throw new ConfigError(`SUMMARY_MAX_INPUT_TOKENS: must be at least 2 × SUMMARY_MAX_TOKENS + 300 (got ${raw.SUMMARY_MAX_INPUT_TOKENS})`);
  }
  if (parseDurationMs(raw.IDEMPOTENCY_CLAIM_LEASE) < 1000) {
    throw new ConfigError(`IDEMPOTENCY_CLAIM_LEASE: must be at least 1s (got "${raw.IDEMPOTENCY_CLAIM_LEASE}")`);
  }
  if (raw.EMBEDDINGS_PROVIDER === 'local' && raw.EMBEDDINGS_MODEL && RETIRED_LOCAL_MODELS.includes(raw.EMBEDDINGS_MODEL)) {
    // Its vectors are no longer what the local embedder computes: new ones under the old name would
    // be compared with stored ones that differ.
    throw new ConfigError(
      `EMBEDDINGS_MODEL: ${raw.EMBEDDINGS_MODEL} was replaced by ${LOCAL_MODEL}; unset EMBEDDINGS_MODEL or set ${LOCAL_MODEL} (stored turns are re-embedded at start)`,
    );
  }
  if (parseDurationMs(raw.MEMORY_CLEANUP_INTERVAL) < 1000) {
    throw new ConfigError(`MEMORY_CLEANUP_INTERVAL: must be at least 1s (got "${raw.MEMORY_CLEANUP_INTERVAL}")`);
  }

  const piiMode = raw.MEMORY_PII ?? (isProduction ? 'mask' : 'off');
  if (piiMode === 'hash' && !raw.MEMORY_PII_SECRET) {
    throw new ConfigError('MEMORY_PII_SECRET: required when MEMORY_PII=hash (at least 32 characters, the same on every replica)');
  }
  let piiPatterns: CustomPiiPattern[] = [];
  if (raw.MEMORY_PII_PATTERNS) {
    try {
      piiPatterns = parseCustomPiiPatterns(raw.MEMORY_PII_PATTERNS);
    } catch (err) {
      throw new ConfigError(`MEMORY_PII_PATTERNS: ${(err as Error).message}`);
    }
  }

  const rolloutTenantPercent = new Map<string, number>();
  for (const entry of raw.MEMORY_ROLLOUT_TENANTS?.split(',') ?? []) {
    const [tenant = '', percent = ''] = entry.split('=');
    if (Number(percent) > 100) throw new ConfigError(`MEMORY_ROLLOUT_TENANTS: "${tenant}" has ${percent}%; at most 100`);
    rolloutTenantPercent.set(tenant.trim(), Number(percent));
  }

  return {
    ...raw,
    isProduction,
    rolloutTenantPercent,
    tracingEnabled:
      raw.OTEL_TRACES_EXPORTER === 'otlp' ||
      (raw.OTEL_TRACES_EXPORTER === undefined && Boolean(raw.OTEL_EXPORTER_OTLP_ENDPOINT ?? raw.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)),
    piiMode,
    piiPatterns,
    localAuth,
    playground: raw.PLAYGROUND ? raw.PLAYGROUND === 'on' : localAuth,
    host: raw.HOST ?? (localAuth ? '127.0.0.1' : '0.0.0.0'),
    memoryTtlMs: parseDurationMs(raw.MEMORY_TTL),
    jwksCacheTtlMs: parseDurationMs(raw.JWT_JWKS_CACHE_TTL),
    ...(raw.JWT_MAX_AGE ? { jwtMaxAgeMs: parseDurationMs(raw.JWT_MAX_AGE) } : {}),
    cleanupIntervalMs: parseDurationMs(raw.MEMORY_CLEANUP_INTERVAL),
    gdprExportTtlMs: parseDurationMs(raw.GDPR_EXPORT_TTL),
    eraseReclaimWindowMs: parseDurationMs(raw.ERASE_RECLAIM_WINDOW),
    accessAuditRetentionMs: parseDurationMs(raw.ACCESS_AUDIT_RETENTION),
    idempotencyTtlMs: parseDurationMs(raw.IDEMPOTENCY_TTL),
    idempotencyClaimLeaseMs: parseDurationMs(raw.IDEMPOTENCY_CLAIM_LEASE),
    viewPermissionsTtlMs: parseDurationMs(raw.MEMORY_VIEW_PERMISSIONS_TTL),
    answerBackend,
    sqlSchemas: listOf(raw.SQL_SCHEMAS) ?? [raw.SQL_DATABASE_URL === 'embedded-demo' ? 'demo' : 'public'],
    ...(raw.SQL_TABLES ? { sqlTables: listOf(raw.SQL_TABLES) } : {}),
    sqlSchemaRefreshMs: parseDurationMs(raw.SQL_SCHEMA_REFRESH),
    ...sqlMaxPlanCost(raw),
    answerAuth: raw.ANSWER_AUTH ?? (answerBackend === 'upstream' ? 'forward' : 'none'),
    ...accountLinking(raw, isProduction),
    MEMORY_MAX_CONTEXT_TOKENS: raw.MEMORY_MAX_CONTEXT_TOKENS ?? (answerBackend === 'upstream' ? 2000 : 4000),
    embeddingsModel: raw.EMBEDDINGS_MODEL ?? DEFAULT_MODELS[raw.EMBEDDINGS_PROVIDER],
    embeddingsDimensions: raw.EMBEDDINGS_DIMENSIONS ?? DEFAULT_DIMENSIONS[raw.EMBEDDINGS_PROVIDER],
  };
}

function checkSqlBackend(raw: RawConfig) {
  if (!raw.SQL_DATABASE_URL) {
    throw new ConfigError('SQL_DATABASE_URL: required when ANSWER_BACKEND=sql (a postgres:// URL, or embedded-demo)');
  }
  if (!raw.LLM_PROVIDER) throw new ConfigError('LLM_PROVIDER: required when ANSWER_BACKEND=sql (openai or anthropic)');
  if (raw.SQL_DATABASE_URL === 'embedded-demo' && raw.DATABASE_URL) {
    throw new ConfigError(
      'SQL_DATABASE_URL: embedded-demo lives in the embedded database; unset DATABASE_URL, or point SQL_DATABASE_URL at a server',
    );
  }
  if (raw.MEMORY_AUGMENTATION === 'inline') {
    // The sql answerer puts the memory block in its own prompt; inline would put it in the question too.
    throw new ConfigError('MEMORY_AUGMENTATION: inline is not used with ANSWER_BACKEND=sql; use instructions or rewrite');
  }
}

/** ACCOUNT_LINK_*: on with an issuer, which then needs a client, a redirect URL and keys; off, none of them is set. */
function accountLinking(raw: RawConfig, isProduction: boolean): { accountLinking?: AccountLinkingSettings } {
  if (!raw.ACCOUNT_LINK_ISSUER) {
    const stray = (
      [
        'ACCOUNT_LINK_CLIENT_ID',
        'ACCOUNT_LINK_CLIENT_SECRET',
        'ACCOUNT_LINK_REDIRECT_URL',
        'ACCOUNT_LINK_RESOURCE',
        'ACCOUNT_LINK_KEYS',
        'ACCOUNT_LINK_KEYS_FILE',
      ] as const
    ).find((name) => raw[name] !== undefined);
    if (stray) throw new ConfigError(`ACCOUNT_LINK_ISSUER: required when ${stray} is set (account linking is on with an issuer)`);
    return {};
  }
  for (const name of ['ACCOUNT_LINK_CLIENT_ID', 'ACCOUNT_LINK_REDIRECT_URL'] as const) {
    if (!raw[name]) throw new ConfigError(`${name}: required when ACCOUNT_LINK_ISSUER is set`);
  }
  if (isProduction) {
    // Tokens and the authorization code travel on these: never in clear in production.
    for (const name of ['ACCOUNT_LINK_ISSUER', 'ACCOUNT_LINK_REDIRECT_URL'] as const) {
      if (!raw[name]!.startsWith('https://')) throw new ConfigError(`${name}: must be an https:// URL when NODE_ENV=production`);
    }
  }
  if (!raw.ACCOUNT_LINK_SCOPES.split(/\s+/).includes('openid')) {
    throw new ConfigError('ACCOUNT_LINK_SCOPES: must include openid (the ID token names the linked subject)');
  }
  if (Boolean(raw.ACCOUNT_LINK_KEYS) === Boolean(raw.ACCOUNT_LINK_KEYS_FILE)) {
    throw new ConfigError('ACCOUNT_LINK_KEYS or ACCOUNT_LINK_KEYS_FILE: exactly one is required when ACCOUNT_LINK_ISSUER is set');
  }
  let keys: SealingKey[];
  const source = raw.ACCOUNT_LINK_KEYS ? 'ACCOUNT_LINK_KEYS' : 'ACCOUNT_LINK_KEYS_FILE';
  try {
    keys = raw.ACCOUNT_LINK_KEYS ? parseSealingKeys(raw.ACCOUNT_LINK_KEYS) : readSealingKeysFile(raw.ACCOUNT_LINK_KEYS_FILE!);
  } catch (err) {
    throw new ConfigError(`${source}: ${(err as Error).message}`);
  }
  return {
    accountLinking: {
      issuer: raw.ACCOUNT_LINK_ISSUER,
      clientId: raw.ACCOUNT_LINK_CLIENT_ID!,
      ...(raw.ACCOUNT_LINK_CLIENT_SECRET ? { clientSecret: raw.ACCOUNT_LINK_CLIENT_SECRET } : {}),
      redirectUrl: raw.ACCOUNT_LINK_REDIRECT_URL!,
      scopes: raw.ACCOUNT_LINK_SCOPES,
      ...(raw.ACCOUNT_LINK_RESOURCE ? { resource: raw.ACCOUNT_LINK_RESOURCE } : {}),
      keys,
      linkTtlMs: parseDurationMs(raw.ACCOUNT_LINK_TTL),
    },
  };
}

/** PGlite does not enforce statement_timeout, so the embedded demo keeps out what the planner knows to be expensive. */
const EMBEDDED_DEMO_MAX_PLAN_COST = 20_000;

function sqlMaxPlanCost(raw: RawConfig): { sqlMaxPlanCost?: number } {
  const cost = raw.SQL_MAX_PLAN_COST ?? (raw.SQL_DATABASE_URL === 'embedded-demo' ? EMBEDDED_DEMO_MAX_PLAN_COST : undefined);
  return cost === undefined ? {} : { sqlMaxPlanCost: cost };
}

function listOf(value: string | undefined): string[] | undefined {
  const items = value
    ?.split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  return items?.length ? items : undefined;
}
