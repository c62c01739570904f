import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../services/config/config.js';

const SQL_LLM = { LLM_PROVIDER: 'openai', LLM_MODEL: 'm', OPENAI_API_KEY: 'k' };
const ACCOUNT_LINK = {
  ACCOUNT_LINK_ISSUER: 'http://127.0.0.1:9000',
  ACCOUNT_LINK_CLIENT_ID: 'memorychat',
  ACCOUNT_LINK_REDIRECT_URL: 'http://127.0.0.1:8080/account-link/callback',
  ACCOUNT_LINK_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
};

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
      embeddingsModel: 'local-hash-v2',
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
    [{ ANSWER_URL: 'http://x/answerQuestion', ANSWER_STREAM_URL: 'derive' }, /ANSWER_STREAM_URL: no longer used/],
    [{ ANSWER_URL: 'http://x/answerQuestion', ANSWER_AUTH: 'bearer' }, /ANSWER_BEARER_TOKEN/],
    [{ LLM_PROVIDER: 'openai', LLM_MODEL: 'm' }, /OPENAI_API_KEY/],
    [{ LLM_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'k' }, /LLM_MODEL/],
    [{ EMBEDDINGS_DIMENSIONS: '4096' }, /EMBEDDINGS_DIMENSIONS/],
    [{ EMBEDDINGS_MODEL: 'local-hash-v1' }, /EMBEDDINGS_MODEL: local-hash-v1 was replaced by local-hash-v2/],
    [{ JWT_SECRET: 'short' }, /JWT_SECRET/],
    [{ ANSWER_BACKEND: 'sql', ...SQL_LLM }, /SQL_DATABASE_URL: required/],
    [{ ANSWER_BACKEND: 'sql', SQL_DATABASE_URL: 'embedded-demo' }, /LLM_PROVIDER: required/],
    [{ ANSWER_BACKEND: 'sql', SQL_DATABASE_URL: 'mysql://x/y', ...SQL_LLM }, /SQL_DATABASE_URL/],
    [{ ANSWER_BACKEND: 'sql', SQL_DATABASE_URL: 'embedded-demo', DATABASE_URL: 'postgres://x/y', ...SQL_LLM }, /embedded-demo lives in/],
    [{ ANSWER_BACKEND: 'sql', SQL_DATABASE_URL: 'embedded-demo', MEMORY_AUGMENTATION: 'inline', ...SQL_LLM }, /MEMORY_AUGMENTATION/],
    [{ MEMORY_PII: 'hash' }, /MEMORY_PII_SECRET: required/],
    [{ MEMORY_PII_PATTERNS: '{"id": "("}' }, /MEMORY_PII_PATTERNS: "id"/],
    [{ MEMORY_PII: 'redact' }, /MEMORY_PII/],
    [{ MEMORY_ROLLOUT_TENANTS: 'acme=101' }, /MEMORY_ROLLOUT_TENANTS: "acme" has 101%/],
    [{ MEMORY_ROLLOUT_TENANTS: 'acme:50' }, /MEMORY_ROLLOUT_TENANTS/],
    [{ MEMORY_ROLLOUT_PERCENT: '101' }, /MEMORY_ROLLOUT_PERCENT/],
    [{ ACCOUNT_LINK_CLIENT_ID: 'memorychat' }, /ACCOUNT_LINK_ISSUER: required when ACCOUNT_LINK_CLIENT_ID is set/],
    [{ ...ACCOUNT_LINK, ACCOUNT_LINK_REDIRECT_URL: undefined }, /ACCOUNT_LINK_REDIRECT_URL: required/],
    [{ ...ACCOUNT_LINK, ACCOUNT_LINK_KEYS: undefined }, /ACCOUNT_LINK_KEYS or ACCOUNT_LINK_KEYS_FILE: exactly one/],
    [{ ...ACCOUNT_LINK, ACCOUNT_LINK_KEYS_FILE: '/etc/keys' }, /ACCOUNT_LINK_KEYS or ACCOUNT_LINK_KEYS_FILE: exactly one/],
    [{ ...ACCOUNT_LINK, ACCOUNT_LINK_KEYS: 'k1:c2hvcnQ=' }, /ACCOUNT_LINK_KEYS: key "k1" must be 32 bytes/],
    [
      { ...ACCOUNT_LINK, ACCOUNT_LINK_KEYS: undefined, ACCOUNT_LINK_KEYS_FILE: '/nonexistent/keys' },
      /ACCOUNT_LINK_KEYS_FILE: cannot be read \(ENOENT\)/,
    ],
    [{ ...ACCOUNT_LINK, ACCOUNT_LINK_SCOPES: 'offline_access' }, /ACCOUNT_LINK_SCOPES: must include openid/],
    [{ ...ACCOUNT_LINK, NODE_ENV: 'production', JWT_SECRET: 's'.repeat(32) }, /ACCOUNT_LINK_ISSUER: must be an https:\/\/ URL/],
  ])('when %j, then the error says %s', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('when account linking is set, then its settings come checked together, the keys from the environment or a file', () => {
    expect(loadConfig({}).accountLinking).toBeUndefined();
    expect(loadConfig(ACCOUNT_LINK).accountLinking).toMatchObject({
      issuer: 'http://127.0.0.1:9000',
      clientId: 'memorychat',
      scopes: 'openid offline_access',
      linkTtlMs: 600_000,
      keys: [{ id: 'k1', key: Buffer.alloc(32, 1) }],
    });
    const dir = mkdtempSync(path.join(tmpdir(), 'link-keys-'));
    try {
      // A Kubernetes Secret mounted as a file: one key a line, the first sealing.
      writeFileSync(
        path.join(dir, 'keys'),
        `new:${Buffer.alloc(32, 2).toString('base64')}\nold:${Buffer.alloc(32, 1).toString('base64')}\n`,
      );
      const fromFile = loadConfig({ ...ACCOUNT_LINK, ACCOUNT_LINK_KEYS: undefined, ACCOUNT_LINK_KEYS_FILE: path.join(dir, 'keys') });
      expect(fromFile.accountLinking?.keys.map((k) => k.id)).toEqual(['new', 'old']);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('when enum settings and a number are invalid, then each is named once, an enum with its allowed values', () => {
    let message = '';
    try {
      loadConfig({ LOG_LEVEL: 'loud', MEMORY_AUGMENTATION: 'summary', PORT: 'eighty' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(
      message
        .split('\n')
        .slice(1)
        .map((line) => line.trim()),
    ).toEqual([
      'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
      'PORT: must be integer (got "eighty")',
      'MEMORY_AUGMENTATION: must be one of instructions, inline, rewrite (got "summary")',
    ]);
  });

  it("when ANSWER_URL is set and ANSWER_AUTH is not, then the caller's credentials are forwarded; without ANSWER_URL nothing is", () => {
    expect(loadConfig({ ANSWER_URL: 'http://x/answerQuestion' }).answerAuth).toBe('forward');
    expect(loadConfig({ ANSWER_URL: 'http://x/answerQuestion', ANSWER_AUTH: 'none' }).answerAuth).toBe('none');
    expect(loadConfig({}).answerAuth).toBe('none');
  });

  it("when an upstream answerer is set and MEMORY_MAX_CONTEXT_TOKENS is not, then the memory block is bounded for the SDK's four prompts", () => {
    expect(loadConfig({ ANSWER_URL: 'http://x/answerQuestion' }).MEMORY_MAX_CONTEXT_TOKENS).toBe(2000);
    expect(loadConfig({ ANSWER_URL: 'http://x/answerQuestion', MEMORY_MAX_CONTEXT_TOKENS: '4000' }).MEMORY_MAX_CONTEXT_TOKENS).toBe(4000);
  });

  it('when ANSWER_BACKEND=sql is set with its database and LLM, then it is accepted with its defaults', () => {
    expect(loadConfig({ ANSWER_BACKEND: 'sql', SQL_DATABASE_URL: 'embedded-demo', ...SQL_LLM })).toMatchObject({
      answerBackend: 'sql',
      sqlSchemas: ['demo'],
      sqlMaxPlanCost: 20_000,
      SQL_STATEMENT_TIMEOUT_MS: 15_000,
      SQL_MAX_ROWS: 100,
      SQL_REPAIR_ATTEMPTS: 1,
      sqlSchemaRefreshMs: 600_000,
    });
    const server = loadConfig({
      ANSWER_BACKEND: 'sql',
      SQL_DATABASE_URL: 'postgres://reader@warehouse/sales',
      SQL_SCHEMAS: 'sales, finance',
      SQL_TABLES: 'orders,finance.invoices',
      ...SQL_LLM,
    });
    expect(server).toMatchObject({ sqlSchemas: ['sales', 'finance'], sqlTables: ['orders', 'finance.invoices'] });
    expect(server.sqlMaxPlanCost).toBeUndefined();
  });

  it('when a value is an empty string, then it counts as unset', () => {
    expect(loadConfig({ PORT: '', ANSWER_URL: '' }).PORT).toBe(8080);
  });

  it('when MEMORY_PII is unset, then production masks and development stores text as written', () => {
    expect(loadConfig({}).piiMode).toBe('off');
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: 's'.repeat(32) }).piiMode).toBe('mask');
    expect(loadConfig({ NODE_ENV: 'production', JWT_SECRET: 's'.repeat(32), MEMORY_PII: 'off' }).piiMode).toBe('off');
  });

  it('when MEMORY_ROLLOUT_TENANTS is set, then each tenant gets its own percentage', () => {
    expect(loadConfig({ MEMORY_ROLLOUT_TENANTS: 'acme=100,globex=10' }).rolloutTenantPercent).toEqual(
      new Map([
        ['acme', 100],
        ['globex', 10],
      ]),
    );
  });

  it('when ERASE_RECLAIM=rewrite is set, then the embedded database takes it and a server is refused it', () => {
    expect(loadConfig({}).ERASE_RECLAIM).toBe('vacuum');
    expect(loadConfig({ ERASE_RECLAIM: 'rewrite' }).ERASE_RECLAIM).toBe('rewrite');
    expect(() => loadConfig({ ERASE_RECLAIM: 'rewrite', DATABASE_URL: 'postgres://db/memorychat' })).toThrow(
      /ERASE_RECLAIM: `rewrite` is for the embedded database/,
    );
  });
});
