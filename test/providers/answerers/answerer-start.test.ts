import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/config.js';
import { answererNotice, prepareAnswerer } from '../../../services/providers/answerers/answerer-start.js';

/** Start-up dependencies that fail if touched: the upstream and none answerers need neither. */
const untouchable = {
  memory: {
    query: () => {
      throw new Error('the memory database was queried');
    },
  },
  startDemoEngine: () => Promise.reject(new Error('the demo engine was started')),
};

describe("each answer backend's start-up", () => {
  it('when the upstream or none answerer starts, then no engine is started and no login is checked', async () => {
    expect(await prepareAnswerer(loadConfig({ ANSWER_URL: 'http://x/answerQuestion' }), untouchable)).toEqual({});
    expect(await prepareAnswerer(loadConfig({}), untouchable)).toEqual({});
  });

  it('when the sql answerer on the embedded demo starts, then it starts the demo engine first', async () => {
    const config = loadConfig({
      ANSWER_BACKEND: 'sql',
      SQL_DATABASE_URL: 'embedded-demo',
      LLM_PROVIDER: 'openai',
      LLM_MODEL: 'm',
      OPENAI_API_KEY: 'k',
    });
    await expect(prepareAnswerer(config, untouchable)).rejects.toThrow('the demo engine was started');
  });

  it('when the service is ready, then only the upstream answerer says how its requests authenticate, a shared identity as a warning', () => {
    expect(answererNotice(loadConfig({ ANSWER_URL: 'http://x/answerQuestion' }))).toMatchObject({
      level: 'info',
      message: /ANSWER_AUTH=forward/,
    });
    expect(
      answererNotice(loadConfig({ ANSWER_URL: 'http://x/answerQuestion', ANSWER_AUTH: 'bearer', ANSWER_BEARER_TOKEN: 't' })),
    ).toMatchObject({ level: 'warn', message: /ANSWER_AUTH=bearer/ });
    expect(answererNotice(loadConfig({}))).toBeUndefined();
  });
});
