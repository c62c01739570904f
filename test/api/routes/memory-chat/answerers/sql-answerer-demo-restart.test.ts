import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type SqlWarehouse, sqlAnswererEnv, startSqlWarehouse } from '../../../../support/databases/sql-warehouse.js';
import { startFakeOpenAI } from '../../../../support/fakes/fake-llm.js';
import { sqlByQuestion } from '../../../../support/fakes/sql-llm-by-question.js';
import { startTestApp, type TestApp } from '../../../../support/service/test-app.js';

/*
 * Issue 39: questions waiting for the embedded demo engine when it restarts got a 502. The demo has
 * no pg_sleep: the slow statement is one the planner cannot price, which the question's time bound
 * ends by a restart of the engine. A question queued behind it, and one asked while the engine
 * restarts, must wait for the fresh engine and be answered.
 */
/** The server project provides its database server: no demo engine there (a server's statement is ended by pg_terminate_backend). */
const ON_SERVER = inject('serverDatabase') !== undefined;

const ENDLESS = 'SELECT count(*) FROM generate_series(1, (SELECT 200000000))';
const TIMEOUT_MS = 3000;

describe.runIf(!ON_SERVER)('the sql answerer on the embedded demo: questions waiting while the engine restarts', () => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  let t: TestApp;
  let endlessAsked = false;

  beforeAll(async () => {
    const statements = sqlByQuestion({ 'count everything': ENDLESS, 'how many regions': 'SELECT count(*) AS regions FROM demo.regions' });
    fake = await startFakeOpenAI((request) => {
      if (JSON.stringify(request.body).includes('count everything')) endlessAsked = true;
      return statements(request);
    });
    warehouse = await startSqlWarehouse();
    t = await startTestApp({
      ...sqlAnswererEnv(warehouse, { provider: 'openai', baseURL: fake.baseURL }),
      SQL_STATEMENT_TIMEOUT_MS: String(TIMEOUT_MS),
      SQL_REPAIR_ATTEMPTS: '0',
      // The restart takes seconds, a minute and more on a loaded machine: within this wait, a question waits for it.
      SQL_POOL_WAIT_MS: '240000',
    });
  });
  afterAll(async () => {
    await t?.close();
    await warehouse?.remove();
    await fake?.close();
  });

  const ask = (sub: string, question: string) =>
    t.request('POST', '/memoryChat', { token: t.token(sub, { tenant: `tenant-${sub}` }), body: { question } });
  const until = async (done: () => boolean, what: string) => {
    for (let tries = 0; !done(); tries++) {
      if (tries > 12_000) throw new Error(`never saw ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  it('when a question forces a restart, then a question queued behind it and one asked during the restart are answered from the fresh engine, not 502', async () => {
    const finished: string[] = [];
    const settle = (name: string, reply: ReturnType<typeof ask>) =>
      reply.then((r) => {
        finished.push(name);
        return r;
      });
    const engine = t.demoEngine!.pid();
    const endless = settle('endless', ask('mallory', 'count everything, slowly'));
    // Its SQL written, it takes the engine's one connection: the next question queues behind it.
    await until(() => endlessAsked, "the endless question's LLM call");
    const queued = settle('queued', ask('bob', 'how many regions are there?'));
    // The time bound restarts the engine: the engine has no process id until the fresh one is up.
    await until(() => t.demoEngine!.pid() === undefined, 'the restart');
    const duringRestart = settle('during the restart', ask('carol', 'how many regions, while it restarts?'));

    const [ended, waited, arrived] = await Promise.all([endless, queued, duringRestart]);
    expect(ended.status).toBe(200);
    expect(ended.body.answer).toMatch(new RegExp(`^The query ran longer than ${TIMEOUT_MS} ms and the database cancelled it`));
    for (const reply of [waited, arrived]) {
      expect(reply.status).toBe(200);
      expect(reply.body.execution_result['Row 1']).toEqual([{ columnName: 'regions', value: '4' }]);
    }
    // The queued question waited for the endless one to end, and was answered by the fresh engine.
    expect(finished.indexOf('queued')).toBeGreaterThan(finished.indexOf('endless'));
    expect(t.demoEngine!.pid()).not.toBe(engine);
  }, 300_000);
});
