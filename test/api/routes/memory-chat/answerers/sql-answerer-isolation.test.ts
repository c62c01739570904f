import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SERVER, SUPERUSER } from '../../../../support/databases/postgres-server.js';
import { type SqlWarehouse, sqlAnswererEnv, startSqlWarehouse } from '../../../../support/databases/sql-warehouse.js';
import { startFakeOpenAI } from '../../../../support/fakes/fake-llm.js';
import { sqlByQuestion } from '../../../../support/fakes/sql-llm-by-question.js';
import { startTestApp, type TestApp } from '../../../../support/service/test-app.js';

/** The server project provides its database server (test/support/vitest/global-setup-server.ts). */
const ON_SERVER = inject('serverDatabase') !== undefined;

/*
 * A statement the LLM wrote that runs for minutes: the planner cannot see the row count behind the
 * sub-select, so SQL_MAX_PLAN_COST lets it through. It must end at SQL_STATEMENT_TIMEOUT_MS and hold
 * up no one but the SQL answerer's own queue: not the memory store, not /readyz.
 */
const ENDLESS = 'SELECT count(*) FROM generate_series(1, (SELECT 200000000))';
const TIMEOUT_MS = 3000;

describe.each([
  { timeoutMs: TIMEOUT_MS, case: 'ended by the timeout' },
  // A timeout far off: only the cancel can end the statement in time.
  { timeoutMs: 120_000, case: 'cancelled when its client goes away' },
])('the sql answerer: a statement that runs for minutes, $case', ({ timeoutMs }) => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  let t: TestApp;

  beforeAll(async () => {
    fake = await startFakeOpenAI(
      sqlByQuestion({ 'count everything': ENDLESS, 'how many regions': 'SELECT count(*) AS regions FROM demo.regions' }),
    );
    warehouse = await startSqlWarehouse();
    t = await startTestApp({
      ...sqlAnswererEnv(warehouse, { provider: 'openai', baseURL: fake.baseURL }),
      SQL_STATEMENT_TIMEOUT_MS: String(timeoutMs),
      SQL_REPAIR_ATTEMPTS: '0',
      // The demo engine's restart takes seconds, a minute and more on a loaded machine: the next question waits for it.
      SQL_POOL_WAIT_MS: '240000',
      ...(warehouse.embedded ? {} : { SQL_MAX_PLAN_COST: '20000' }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await warehouse?.remove();
    await fake?.close();
  });

  const ask = (sub: string, question: string, signal?: AbortSignal, sessionKey?: string) =>
    fetch(`${t.baseUrl}/memoryChat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token(sub, { tenant: `tenant-${sub}` })}`, 'content-type': 'application/json' },
      body: JSON.stringify({ question, ...(sessionKey ? { session_key: sessionKey } : {}) }),
      signal,
    });
  const timed = async <T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> => {
    const started = performance.now();
    const value = await work();
    return { value, ms: performance.now() - started };
  };

  it.runIf(timeoutMs === TIMEOUT_MS)(
    "when it runs, then another tenant's /memoryChat and /readyz answer at once, and the asker gets a failed turn within the timeout",
    async () => {
      // Something in the other tenant's memory to recall.
      expect((await ask('bob', 'how many regions are there?', undefined, 'bob-chat')).status).toBe(200);

      const started = performance.now();
      const attack = ask('mallory', 'count everything, slowly');
      await new Promise((resolve) => setTimeout(resolve, 800));

      const recall = await timed(async () => {
        const reply = await ask('bob', 'what did I ask before?', undefined, 'bob-chat');
        return { status: reply.status, body: await reply.json() };
      });
      const ready = await timed(() => t.request('GET', '/readyz'));
      expect(recall.value.status).toBe(200);
      expect(JSON.stringify(recall.value.body)).toContain('how many regions are there?');
      expect(recall.ms).toBeLessThan(1500);
      expect(ready.value.status).toBe(200);
      expect(ready.ms).toBeLessThan(1000);

      const attacked = await attack;
      const took = performance.now() - started;
      const body = await attacked.json();
      expect(attacked.status).toBe(200);
      expect(body.answer).toMatch(new RegExp(`^The query ran longer than ${TIMEOUT_MS} ms and the database cancelled it`));
      expect(took).toBeLessThan(TIMEOUT_MS + 5000);
      const stored = await t.admin.query('SELECT status FROM turns WHERE session_id = $1', [body.conversation_metadata.conversation_id]);
      expect(stored.rows).toEqual([{ status: 'failed' }]);

      // The SQL answerer serves again (on the embedded demo, from a fresh engine).
      const after = await ask('bob', 'how many regions now?');
      expect(after.status).toBe(200);
      expect((await after.json()).execution_result['Row 1']).toEqual([{ columnName: 'regions', value: '4' }]);
    },
    300_000,
  );

  it.runIf(timeoutMs !== TIMEOUT_MS)(
    'when the client that asked goes away, then its statement is ended at once, not at the timeout, and the SQL answerer serves the next question',
    async () => {
      // The warehouse reader's statements running for more than half a second, seen as the superuser (the
      // reader's sessions are hidden from other logins). Not by their text: a cursor's FETCH runs them.
      const running = async () => {
        const client = new pg.Client({ ...SERVER, user: SUPERUSER, database: 'postgres' });
        await client.connect();
        try {
          const found = await client.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND now() - query_start > interval '500 milliseconds'",
            [new URL(warehouse.env.SQL_DATABASE_URL).username],
          );
          return found.rows[0].n as number;
        } finally {
          await client.end();
        }
      };
      const engine = t.demoEngine?.pid();
      const gone = new AbortController();
      const attack = ask('mallory', 'count everything, then hang up', gone.signal).catch((err: Error) => err);
      // Until the statement runs: seen on the server; on the embedded demo, given time (its engine shows nothing).
      if (ON_SERVER) await until(async () => (await running()) === 1, 30_000);
      else await new Promise((resolve) => setTimeout(resolve, 4000));
      gone.abort();
      expect(await attack).toBeInstanceOf(Error);

      const ended = performance.now();
      if (ON_SERVER) await until(async () => (await running()) === 0, 3000);
      // PGlite cannot cancel: the engine's process is killed (and another started).
      else await until(async () => !isAlive(engine!), 5000);
      console.log(`the abandoned statement ended ${Math.round(performance.now() - ended)} ms after its client went away`);

      const next = await timed(async () => (await ask('bob', 'how many regions this time?')).json());
      expect(next.value.execution_result['Row 1']).toEqual([{ columnName: 'regions', value: '4' }]);
      console.log(`the next question was answered in ${Math.round(next.ms)} ms`);
    },
    300_000,
  );
});

async function until(condition: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
