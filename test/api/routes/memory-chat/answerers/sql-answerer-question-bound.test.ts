import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { asSuperuser, type SqlWarehouse, sqlAnswererEnv, startSqlWarehouse } from '../../../../support/databases/sql-warehouse.js';
import { startFakeOpenAI } from '../../../../support/fakes/fake-llm.js';
import { sqlByQuestion } from '../../../../support/fakes/sql-llm-by-question.js';
import { startTestApp, type TestApp } from '../../../../support/service/test-app.js';

/** The server project provides its database server (test/support/vitest/global-setup-server.ts). */
const ON_SERVER = inject('serverDatabase') !== undefined;

/*
 * The attack's statements (issue 39): SQL that stretches one question over many fetches, each under
 * statement_timeout (64 columns: one row per fetch, 2.5 s each, 20 s under a 3 s setting), SQL that
 * lifts statement_timeout for its own transaction and then sleeps, and SQL that takes a session-level
 * advisory lock on the pooled connection. The timeout is the attack's 3 s: below a row's 2.5 s the
 * database's own timeout would end the first fetch and the test would show nothing.
 */
const TIMEOUT_MS = 3000;
const SIXTY_FOUR_COLUMNS = `SELECT pg_sleep(2.5) AS c1, ${Array.from({ length: 63 }, (_, i) => `1 AS c${i + 2}`).join(', ')} FROM generate_series(1, 8)`;
const LIFTS_ITS_TIMEOUT =
  "SELECT CASE WHEN g = 1 THEN set_config('statement_timeout', '0', true) END, pg_sleep(CASE WHEN g > 32 THEN 5 ELSE 0 END) FROM generate_series(1, 40) g";
/** The sixty-four columns for 200 rows: 500 s unless the service ends it. */
const SIXTY_FOUR_COLUMNS_FOR_LONG = SIXTY_FOUR_COLUMNS.replace('generate_series(1, 8)', 'generate_series(1, 200)');
const LOCK_KEY = 739_104;
const TAKES_A_LOCK = `SELECT pg_advisory_lock(${LOCK_KEY}) AS locked`;
const LOCKS_HELD = `SELECT count(*) AS held FROM pg_locks WHERE locktype = 'advisory' AND objid = ${LOCK_KEY} AND objsubid = 1`;

describe('the sql answerer: one time bound per question, and nothing left on the connection', () => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  let t: TestApp;

  beforeAll(async () => {
    fake = await startFakeOpenAI(
      sqlByQuestion({
        'sixty-four columns': SIXTY_FOUR_COLUMNS,
        'lift the timeout': LIFTS_ITS_TIMEOUT,
        'take a lock': TAKES_A_LOCK,
        'which locks': LOCKS_HELD,
        'no way to end it': SIXTY_FOUR_COLUMNS_FOR_LONG,
      }),
    );
    warehouse = await startSqlWarehouse();
    t = await startTestApp({
      ...sqlAnswererEnv(warehouse, { provider: 'openai', baseURL: fake.baseURL }),
      SQL_STATEMENT_TIMEOUT_MS: String(TIMEOUT_MS),
      SQL_REPAIR_ATTEMPTS: '0',
      // One connection: the next question runs on the session the last one used.
      SQL_POOL_MAX: '1',
      // The demo engine's restart takes seconds, a minute and more on a loaded machine: the next question waits for it.
      SQL_POOL_WAIT_MS: '240000',
    });
  });
  afterAll(async () => {
    await t?.close();
    await warehouse?.remove();
    await fake?.close();
  });

  const ask = (question: string) => t.request('POST', '/memoryChat', { token: t.token('mallory', { tenant: 'evil' }), body: { question } });

  const reader = () => new URL(warehouse.env.SQL_DATABASE_URL).username;
  /** The warehouse reader's active statements, seen as the superuser (the reader's sessions are hidden from other logins). */
  const readerStatements = () =>
    asSuperuser(async (client) => {
      const found = await client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND state = 'active'", [
        reader(),
      ]);
      return found.rows[0].n as number;
    });
  /** The warehouse reader's backends, whatever their state. */
  const readerBackends = () =>
    asSuperuser(async (client) => {
      const found = await client.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1', [reader()]);
      return found.rows[0].n as number;
    });

  it.runIf(ON_SERVER).each([
    { question: 'sixty-four columns, one row per fetch', case: 'stretches the question over many fetches' },
    { question: 'lift the timeout, then sleep', case: 'lifts statement_timeout for its transaction' },
  ])(
    'when the SQL $case, then the service ends it at the timeout, the answer is the timeout, and the statement no longer runs',
    async ({ question }) => {
      const reply = await ask(question);
      expect(reply.status).toBe(200);
      expect(reply.body.answer).toMatch(new RegExp(`^The query ran longer than ${TIMEOUT_MS} ms and the database cancelled it`));
      expect(reply.body.sql_error).toMatch(/statement timeout/);
      expect(reply.body.execution_result).toEqual({});
      const stored = await t.admin.query('SELECT status FROM turns WHERE session_id = $1', [
        reply.body.conversation_metadata.conversation_id,
      ]);
      expect(stored.rows).toEqual([{ status: 'failed' }]);
      await expect.poll(readerStatements, { timeout: 10_000 }).toBe(0);
    },
    60_000,
  );

  it.runIf(!ON_SERVER).each([
    { question: 'sixty-four columns, one row per fetch', sql: SIXTY_FOUR_COLUMNS, refused: /permission denied for function pg_sleep/ },
    { question: 'lift the timeout, then sleep', sql: LIFTS_ITS_TIMEOUT, refused: /permission denied for function (set_config|pg_sleep)/ },
  ])('when the attack runs $question on the embedded demo, then the functions it needs are refused', async ({ question, refused }) => {
    const reply = await ask(question);
    expect(reply.status).toBe(200);
    expect(reply.body.answer).toMatch(/^The database refused this query/);
    expect(reply.body.sql_error).toMatch(refused);
  });

  it('when the SQL takes a session-level advisory lock, then the lock is gone once the question is answered', async () => {
    const taken = await ask('take a lock and keep it');
    expect(taken.status).toBe(200);
    expect(taken.body.execution_result['Row 1']).toEqual([{ columnName: 'locked', value: '' }]);
    // Asked through the service, on the same connection: pg_locks shows every session's locks.
    const held = await ask('which locks are held?');
    expect(held.body.execution_result['Row 1']).toEqual([{ columnName: 'held', value: '0' }]);
    if (warehouse.pool) {
      const seen = await warehouse.pool.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1", [
        LOCK_KEY,
      ]);
      expect(seen.rows).toEqual([{ n: 0 }]);
    }
  });

  it.runIf(ON_SERVER)(
    "when the service cannot open its connection to end the statement (the login at its CONNECTION LIMIT), then it closes the question's own connection: the answer is the timeout and the backend is gone",
    async () => {
      // The question's own connection is the login's one: pg_terminate_backend needs a second, refused.
      await asSuperuser((client) => client.query(`ALTER ROLE ${pg.escapeIdentifier(reader())} CONNECTION LIMIT 1`));
      try {
        const reply = await ask('no way to end it: one slow row per fetch, 200 of them');
        expect(reply.status).toBe(200);
        expect(reply.body.answer).toMatch(new RegExp(`^The query ran longer than ${TIMEOUT_MS} ms and the database cancelled it`));
        expect(reply.body.sql_error).toMatch(/statement timeout/);
        const stored = await t.admin.query('SELECT status FROM turns WHERE session_id = $1', [
          reply.body.conversation_metadata.conversation_id,
        ]);
        expect(stored.rows).toEqual([{ status: 'failed' }]);
        // Ended once it noticed its client gone: the statement alone would run 500 s.
        await expect.poll(readerBackends, { timeout: 60_000, interval: 250 }).toBe(0);
      } finally {
        await asSuperuser((client) => client.query(`ALTER ROLE ${pg.escapeIdentifier(reader())} CONNECTION LIMIT -1`));
      }
    },
    120_000,
  );
});
