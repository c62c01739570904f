import { describe, expect, it } from 'vitest';
import { ANSWERER_SETTINGS } from '../../../services/config/answerers/index.js';
import { loadConfig } from '../../../services/config/config.js';
import { ANSWER_BACKENDS } from '../../../services/model/answer-backends.js';

const SQL = {
  ANSWER_BACKEND: 'sql',
  SQL_DATABASE_URL: 'postgres://reader@db/sales',
  LLM_PROVIDER: 'openai',
  LLM_MODEL: 'm',
  OPENAI_API_KEY: 'k',
};
const ENV_OF = {
  upstream: { ANSWER_URL: 'http://x/answerQuestion' },
  sql: SQL,
  none: {},
} satisfies Record<(typeof ANSWER_BACKENDS)[number], Record<string, string>>;

describe("each answer backend's defaults", () => {
  it('when the backends are listed, then each has its own settings and no other', () => {
    expect(Object.keys(ANSWERER_SETTINGS).sort()).toEqual([...ANSWER_BACKENDS].sort());
  });

  it.each(ANSWER_BACKENDS)(
    'when %s answers and ANSWER_AUTH and MEMORY_MAX_CONTEXT_TOKENS are unset, then its own defaults apply',
    (backend) => {
      const config = loadConfig(ENV_OF[backend]);
      expect(config.answerBackend).toBe(backend);
      expect(config.answerAuth).toBe(ANSWERER_SETTINGS[backend].defaultAuth);
      expect(config.MEMORY_MAX_CONTEXT_TOKENS).toBe(ANSWERER_SETTINGS[backend].defaultMaxContextTokens);
    },
  );

  it('when the backends are compared, then only the upstream one forwards credentials and bounds the memory block to 2000 tokens', () => {
    expect(ANSWERER_SETTINGS.upstream).toMatchObject({ defaultAuth: 'forward', defaultMaxContextTokens: 2000 });
    expect(ANSWERER_SETTINGS.sql).toMatchObject({ defaultAuth: 'none', defaultMaxContextTokens: 4000 });
    expect(ANSWERER_SETTINGS.none).toMatchObject({ defaultAuth: 'none', defaultMaxContextTokens: 4000 });
  });

  it("when ANSWER_AUTH=forward, then only the upstream answerer sends each caller's credentials", () => {
    expect(loadConfig(ENV_OF.upstream).forwardsCallerCredentials).toBe(true);
    expect(loadConfig({ ...ENV_OF.upstream, ANSWER_AUTH: 'none' }).forwardsCallerCredentials).toBe(false);
    expect(loadConfig({ ...SQL, ANSWER_AUTH: 'forward' }).forwardsCallerCredentials).toBe(false);
    expect(loadConfig({ ANSWER_AUTH: 'forward' }).forwardsCallerCredentials).toBe(false);
  });

  it('when a backend is set explicitly, then its defaults follow it, not ANSWER_URL', () => {
    const config = loadConfig({ ...SQL, ANSWER_URL: 'http://x/answerQuestion' });
    expect(config).toMatchObject({ answerBackend: 'sql', answerAuth: 'none', MEMORY_MAX_CONTEXT_TOKENS: 4000 });
    expect(loadConfig({ ANSWER_BACKEND: 'none', ANSWER_URL: 'http://x/answerQuestion' })).toMatchObject({
      answerBackend: 'none',
      answerAuth: 'none',
    });
  });

  it("when the sql answerer's settings are refused, then the message names the variable", () => {
    expect(() => loadConfig({ ...SQL, SQL_DATABASE_URL: '' })).toThrow(/SQL_DATABASE_URL: required when ANSWER_BACKEND=sql/);
    expect(() => loadConfig({ ...SQL, LLM_PROVIDER: '' })).toThrow(/LLM_PROVIDER: required when ANSWER_BACKEND=sql/);
    expect(() => loadConfig({ ...SQL, MEMORY_AUGMENTATION: 'inline' })).toThrow(/MEMORY_AUGMENTATION: inline is not used/);
    expect(() => loadConfig({ ...SQL, SQL_DATABASE_URL: 'embedded-demo', DATABASE_URL: 'postgres://m@db/memory' })).toThrow(
      /SQL_DATABASE_URL: embedded-demo lives in the embedded database/,
    );
  });
});
