import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type GenericPlanConfig, queryScoped, type ScopeValues } from '../../services/db/scoped-statement.js';
import { SUPERUSER } from '../support/databases/postgres-server.js';
import { cachedPlanBytes } from '../support/databases/test-database.js';
import { startFakeUpstream } from '../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

/** A statement as the service sent it: its text and its bind values. */
interface Sent {
  text: string;
  values: unknown[];
  /** What the service ran ahead of it in its round trip (the erasure barrier ahead of an append). */
  before?: GenericPlanConfig['before'];
}

/**
 * Every request-path statement of one user is routed to that user's shard: the service's own
 * statements, recorded as it sends them for real requests (a question with memory and its follow-up,
 * a stored turn, a memory search, the session list and a session's turns), then EXPLAINed on the
 * coordinator with the same values under the same user's scope. Each must be one Citus step of one
 * task: no subplan through the coordinator. A statement over no distributed table (the scope, the
 * erasure barrier) has no Citus plan. A statement sent as a call on the user's shard
 * (db/user-shard-call.ts), the retrieval and the append, is checked twice: the call is delegated to
 * one worker (Citus reports "pushing down the function call"), and each statement it carries is one
 * task as well. The append's side on its worker: planned once per connection, on the user's shards,
 * behind the shard group's metadata lock that a shard move takes (migration 028).
 */
/** The statement a retrieval's call carries (migration 024), with its own values (the vector back in its place). */
function retrievalStatement(values: unknown[]): Sent {
  const [params, vectorAt, vector] = [values[6] as (string | null)[], values[7] as number, values[8]];
  return { text: String(values[5]), values: params.map((v, i) => (i + 1 === vectorAt ? vector : v)) };
}

/** The statements an append's call carries (migration 026): the session row's, the turn's (its vector back in place), the mark's. */
function appendStatements(values: unknown[]): Sent[] {
  const [vectorAt, vector] = [values[9] as number, values[10]];
  const carried: Sent[] = [
    { text: String(values[4]), values: values[5] as unknown[] },
    { text: String(values[7]), values: (values[8] as unknown[]).map((v, i) => (i + 1 === vectorAt ? vector : v)) },
  ];
  if (values[11] !== null) carried.push({ text: String(values[12]), values: values[13] as unknown[] });
  return carried;
}

describe('single-shard plans on Citus (docs/scaling.md)', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let t: TestApp;
  const sent: Sent[] = [];
  const clientQuery = pg.Client.prototype.query;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    t = await startTestApp({ ANSWER_URL: upstream.answerUrl });
  });
  afterAll(async () => {
    pg.Client.prototype.query = clientQuery;
    await t?.close();
    await upstream?.close();
  });

  /** Runs `requests`, recording the statements every pg client of this process sends meanwhile. */
  async function recording(requests: () => Promise<void>): Promise<Sent[]> {
    const from = sent.length;
    pg.Client.prototype.query = function (this: pg.Client, statement: unknown, values?: unknown, callback?: unknown) {
      const config = statement as GenericPlanConfig & { parseOnly?: boolean };
      // A statement prepared alone first (db/citus-scope.ts) is recorded when it runs, with its values.
      const text = typeof statement === 'string' ? statement : config?.parseOnly ? undefined : config?.text;
      if (text) sent.push({ text, values: (Array.isArray(values) ? values : config?.values) ?? [], before: config?.before });
      return (clientQuery as any).call(this, statement, values, callback);
    } as typeof clientQuery;
    try {
      await requests();
    } finally {
      pg.Client.prototype.query = clientQuery;
    }
    return sent.slice(from);
  }

  it('when a user asks, follows up, stores a turn, searches and reads sessions, then each statement on a distributed table runs as one task', async () => {
    const token = t.token('plan-user');
    const statements = await recording(async () => {
      const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Show me total sales by region for 2024' } });
      expect(first.status).toBe(200);
      const sessionId = first.body.conversation_metadata.conversation_id;
      const followUp = await t.request('POST', '/memoryChat', { token, body: { question: 'What about 2023?', session_id: sessionId } });
      expect(followUp.status).toBe(200);
      const stored = await t.request('POST', `/sessions/${sessionId}/turns`, {
        token,
        body: { question: 'Which region grew most?', answer: 'The north grew 12%.', sql_query: 'SELECT 1' },
      });
      expect(stored.status).toBe(201);
      const search = await t.request('POST', '/memory/search', { token, body: { query: 'sales by region', k: 3 } });
      expect(search.status).toBe(200);
      expect((await t.request('GET', '/sessions', { token })).status).toBe(200);
      expect((await t.request('GET', `/sessions/${sessionId}`, { token })).status).toBe(200);
    });

    const scoped = t.database.scoped.asUser({ tenantId: 'default', userId: 'plan-user' });
    const scope: ScopeValues = ['memorychat_app', 'default', 'plan-user', 'off'];
    const calls = statements.filter((s) => /^SELECT memorychat_(append_)?on_user_shard\(/.test(s.text));
    const delegated: string[][] = [];
    const client = await t.database.pool.connect();
    const notices: string[] = [];
    const onNotice = (notice: { message?: string }) => notices.push(notice.message ?? '');
    client.on('notice', onNotice);
    try {
      await client.query('SET client_min_messages TO debug1');
      for (const { text, values, before } of calls) {
        notices.length = 0;
        // As the service sends it: under the scope, in no transaction block; an append behind the
        // erasure barrier, run on the coordinator in the same round trip and transaction.
        const append = text.startsWith('SELECT memorychat_append_on_user_shard(');
        if (append) expect(before?.map((b) => b.text)).toEqual(['SELECT memorychat_erase_barrier($1, $2, $3::bigint)']);
        const plan = await queryScoped<{ 'QUERY PLAN': string }>(client, scope, {
          text: `EXPLAIN ${text}`,
          values,
          before,
        } as GenericPlanConfig);
        const lines = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
        const carried = append ? appendStatements(values) : [retrievalStatement(values)];
        if (notices.includes('pushing down the function call') && /Task Count: 1\b/.test(lines)) delegated.push(carried.map((s) => s.text));
        statements.push(...carried);
      }
    } finally {
      await client.query('RESET client_min_messages');
      client.removeListener('notice', onNotice);
      client.release();
    }
    expect(delegated.length, 'every call delegated to one worker').toBe(calls.length);
    expect(
      delegated.filter(([text]) => /^\s*WITH sess AS/.test(text!)).length,
      'the retrieval goes as a call on the user’s shard',
    ).toBeGreaterThan(0);
    expect(
      delegated.filter((texts) => texts.some((text) => /^INSERT INTO turns/.test(text))).length,
      'the append goes as a call on the user’s shard',
    ).toBeGreaterThan(0);

    const plans: { text: string; tasks: number | undefined }[] = [];
    for (const { text, values } of statements) {
      if (
        !/\b(sessions|turns|idempotency_keys|access_audit)\b/.test(text) ||
        /^\s*(BEGIN|COMMIT|ROLLBACK|SET|SELECT EXISTS \(SELECT 1 FROM pg_extension)/i.test(text)
      )
        continue;
      const plan = await scoped.transaction((tx) => tx.query<{ 'QUERY PLAN': string }>({ text: `EXPLAIN ${text}`, values }));
      const lines = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      if (process.env.SHOW_PLANS) console.log(text.slice(0, 60), '\n', lines);
      // One Citus step: a statement planned as subplans (each its own step through the coordinator)
      // shows several task counts, or none for an INSERT ... SELECT; a router statement shows one.
      const counts = [...lines.matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1]));
      if (!/Custom Scan \(Citus/.test(lines)) continue;
      plans.push({
        text: text.replace(/\s+/g, ' ').trim(),
        tasks: counts.length === 1 && !/Distributed Subplan/.test(lines) ? counts[0] : undefined,
      });
    }
    // The statements the issue names are among them: retrieval (one statement), append, search, session reads.
    const named = (pattern: RegExp) => plans.filter((p) => pattern.test(p.text));
    expect(named(/^WITH sess AS/).length, 'the retrieval statement').toBeGreaterThan(0);
    expect(named(/^INSERT INTO turns/).length, 'the append statements').toBeGreaterThan(0);
    expect(named(/^(INSERT INTO sessions|UPDATE sessions SET turn_count)/).length, 'the append statements').toBeGreaterThan(0);
    expect(named(/^WITH scored AS|^WITH history AS/).length, 'the search statement').toBeGreaterThan(0);
    expect(named(/FROM sessions/).length, 'the session reads').toBeGreaterThan(0);
    for (const plan of plans) expect(plan, plan.text.slice(0, 120)).toMatchObject({ tasks: 1 });
    console.log(`single-shard plans: ${plans.length} statements, each 1 task; ${delegated.length} calls delegated to the user's worker`);
  });

  /**
   * A follow-up's append (its session row updated) as the service sent it for `user`, and a superuser's
   * connection to the worker holding that user's shards, in the test's database: the worker's side of
   * the delegated call, where its memory and locks can be read.
   */
  async function followUpAppendOnWorker(user: string) {
    const token = t.token(user);
    const statements = await recording(async () => {
      const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Show me total sales by region for 2024' } });
      expect(first.status).toBe(200);
      const followUp = await t.request('POST', '/memoryChat', {
        token,
        body: { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id },
      });
      expect(followUp.status).toBe(200);
    });
    const append = statements.filter((s) => s.text.startsWith('SELECT memorychat_append_on_user_shard(')).at(-1)!;
    expect(String(append.values[4])).toMatch(/^UPDATE sessions SET/);
    const { rows } = await t.admin.query<{ database: string; nodename: string; nodeport: number; shard: string }>(
      `SELECT current_database() AS database, nodename, nodeport, shardid::text AS shard FROM citus_shards
       WHERE shardid = get_shard_id_for_distribution_column('sessions', $1::text)`,
      [user],
    );
    const { database, nodename, nodeport, shard } = rows[0]!;
    const connect = async () => {
      const client = new pg.Client({ host: nodename, port: nodeport, user: SUPERUSER, database });
      await client.connect();
      return client;
    };
    const turns = async () =>
      (await t.admin.query<{ n: number }>('SELECT count(*)::int AS n FROM turns WHERE user_id = $1', [user])).rows[0]!.n;
    return { append, shard, connect, turns };
  }

  it('when a worker connection runs the same append again and again, then it prepares its statements once on the user’s shards and its cached plans stop growing', async () => {
    const { append, shard, connect } = await followUpAppendOnWorker('plan-cache-user');
    const worker = await connect();
    try {
      const replay = async (times: number) => {
        for (let i = 0; i < times; i++) await worker.query(append.text, append.values);
      };
      await replay(10);
      const warm = await cachedPlanBytes(worker);
      await replay(40);
      // Named by the distributed tables, Citus 13.2.1 and 13.2.2 planned each statement's shard query
      // again on every call and kept each plan: about 0.2 MB more per call (migration 028).
      expect((await cachedPlanBytes(worker)) - warm, 'cached plans after 40 more appends').toBeLessThan(64 * 1024);
      const { rows: prepared } = await worker.query<{ name: string; statement: string; generic_plans: number }>(
        `SELECT name, statement, generic_plans::int FROM pg_prepared_statements WHERE name LIKE 'mc\\_%' ORDER BY name`,
      );
      expect(prepared.map((p) => p.name).sort()).toEqual([`${append.values[3]}_${shard}`, `${append.values[6]}_${shard}`].sort());
      for (const p of prepared) {
        expect(p.statement, p.name).toMatch(/^PREPARE \S+ AS (UPDATE sessions_\d+ SET|INSERT INTO turns_\d+ )/);
        expect(p.generic_plans, p.name).toBeGreaterThan(40);
      }
    } finally {
      await worker.end();
    }
  });

  it('when a shard move holds the user’s shard group for its switch-over, then the delegated append waits for it and then stores the turn', async () => {
    const { append, connect, turns } = await followUpAppendOnWorker('moved-user');
    const [mover, writer] = [await connect(), await connect()];
    try {
      const before = await turns();
      // What a move takes on every node before its switch-over (shard_transfer.c, BlockWritesToShardList):
      // the exclusive lock on the group's metadata, here through the group's turns shard.
      await mover.query('BEGIN');
      await mover.query(`SELECT lock_shard_metadata(7, ARRAY[get_shard_id_for_distribution_column('turns', $1::text)])`, ['moved-user']);
      const writerPid = (await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const appended = writer.query(append.text, append.values);
      await vi.waitFor(
        async () => {
          const { rows } = await mover.query<{ wait: string | null }>(
            'SELECT wait_event_type AS wait FROM pg_stat_activity WHERE pid = $1',
            [writerPid],
          );
          expect(rows[0]!.wait).toBe('Lock');
        },
        { timeout: 10_000, interval: 50 },
      );
      expect(await turns(), 'nothing stored while the move holds the group').toBe(before);
      await mover.query('ROLLBACK');
      await appended;
      expect(await turns()).toBe(before + 1);
    } finally {
      await mover.end();
      await writer.end();
    }
  });
});
