// `npm run bench -- sql-fairness [--server]`: the SQL answerer's connections under the attack's
// three-tenant load (issue 39; docs/sql-answerer.md, "Connections shared between tenants"). Two tenants
// with 3 users each keep 2 statements each waiting for or holding a connection (--hold-ms each: pg_sleep on
// a server, a count over generate_series on the embedded demo engine), while a third tenant asks
// `SELECT 1` after `SELECT 1` for --seconds. Run twice: with the connections given out fairly
// (sql-fair-queue.ts), and in arrival order (pg-pool's own queue, as before). Reported per run: the
// third tenant's answers of questions asked, its busy replies (no connection within --wait-ms), the
// p50/p95 time of its answered ones (the wait for a connection and the SELECT 1), and the two
// tenants' answers. Options: --server (a warehouse database on BENCH_DATABASE_URL's server; default:
// the embedded demo engine), --pool 2 (connections on a server; the engine has one), --wait-ms 3000,
// --hold-ms 1500, --seconds 30.
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadDemoTables } from '../../services/db/demo/demo-dataset.js';
import { startDemoEngine } from '../../services/db/demo/demo-engine.js';
import { type SqlDatabase, serverSqlDatabase } from '../../services/providers/answerers/sql/sql-database.js';
import { executeReadOnly } from '../../services/providers/answerers/sql/sql-execution.js';
import { createFairQueue, SlotWaitTimeoutError } from '../../services/providers/answerers/sql/sql-fair-queue.js';
import { percentile } from './load.js';
import { databaseUrl, dropDatabase, recreateDatabase } from './server-databases.js';

const { values: args } = parseArgs({
  options: {
    server: { type: 'boolean', default: false },
    pool: { type: 'string', default: '2' },
    'wait-ms': { type: 'string', default: '3000' },
    'hold-ms': { type: 'string', default: '1500' },
    seconds: { type: 'string', default: '30' },
  },
});
const waitMs = Number(args['wait-ms']);
const holdMs = Number(args['hold-ms']);
const seconds = Number(args.seconds);
const LIMITS = { maxRows: 100, cellBytes: 16_384, resultBytes: 1_048_576 };
const TIMEOUT_MS = 60_000;

interface Place {
  database(queue: SqlDatabase['queue']): SqlDatabase;
  hold: string;
  capacity: number;
  close(): Promise<void>;
}

async function serverPlace(): Promise<Place> {
  const name = 'mc_bench_sql_fairness';
  await recreateDatabase(name);
  const loader = new pg.Client({ connectionString: databaseUrl(name) });
  await loader.connect();
  await loadDemoTables(loader);
  await loader.end();
  const capacity = Number(args.pool);
  const pool = new pg.Pool({ connectionString: databaseUrl(name), max: capacity, connectionTimeoutMillis: waitMs });
  pool.on('error', () => {});
  return {
    database: (queue) => serverSqlDatabase(pool, { schemas: ['demo'], statementTimeoutMs: TIMEOUT_MS, queue }),
    hold: `SELECT pg_sleep(${holdMs / 1000}) AS slept`,
    capacity,
    async close() {
      await pool.end();
      await dropDatabase(name);
    },
  };
}

async function embeddedPlace(): Promise<Place> {
  const engine = await startDemoEngine({ waitMs });
  // Rows counted in --hold-ms on this machine, measured once.
  const probe = await engine.connect();
  const started = performance.now();
  await probe.query('SELECT count(*) FROM generate_series(1, 1000000)');
  const perMillion = performance.now() - started;
  probe.release();
  const rows = Math.max(1, Math.round((holdMs / perMillion) * 1_000_000));
  return {
    database: (queue) => ({
      schemas: ['demo'],
      statementTimeoutMs: TIMEOUT_MS,
      role: engine.role,
      connect: engine.connect,
      cancel: engine.restart,
      queue,
    }),
    hold: `SELECT count(*) AS n FROM generate_series(1, (SELECT ${rows}))`,
    capacity: 1,
    close: () => engine.close(),
  };
}

interface Run {
  asked: number;
  answered: number;
  busy: number;
  waits: number[];
  othersAnswered: number;
}

async function run(database: SqlDatabase, hold: string): Promise<Run> {
  const result: Run = { asked: 0, answered: 0, busy: 0, waits: [], othersAnswered: 0 };
  const ask = async (tenant: string, sql: string) => {
    const execution = await executeReadOnly(database, sql, LIMITS, { budget: { leftMs: TIMEOUT_MS }, tenant });
    return execution.ok;
  };
  let going = true;
  const others = ['initech', 'hooli'].flatMap((tenant) =>
    Array.from({ length: 3 * 2 }, async () => {
      while (going) {
        try {
          if (await ask(tenant, hold)) result.othersAnswered++;
        } catch (err) {
          if (!isBusy(err)) throw err;
        }
      }
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, holdMs));
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    result.asked++;
    const started = performance.now();
    try {
      if (await ask('victim', 'SELECT 1 AS one')) result.answered++;
      result.waits.push(performance.now() - started);
    } catch (err) {
      if (!isBusy(err)) throw err;
      result.busy++;
    }
  }
  going = false;
  await Promise.all(others);
  return result;
}

function isBusy(err: unknown): boolean {
  return err instanceof SlotWaitTimeoutError || (err instanceof Error && err.message === 'timeout exceeded when trying to connect');
}

const place = args.server ? await serverPlace() : await embeddedPlace();
try {
  console.log(
    `sql-fairness on ${args.server ? `a server, ${place.capacity} connections` : 'the embedded demo engine, 1 connection'}: ` +
      `2 tenants x 3 users x 2 statements of ${holdMs} ms, a third tenant asking SELECT 1 for ${seconds} s, wait ${waitMs} ms`,
  );
  for (const [mode, capacity] of [
    ['fair shares (sql-fair-queue.ts)', place.capacity],
    ['arrival order (pg-pool alone)', Number.POSITIVE_INFINITY],
  ] as const) {
    const r = await run(place.database(createFairQueue(capacity, waitMs)), place.hold);
    const waits = r.waits.sort((a, b) => a - b);
    console.log(
      `${mode}: third tenant answered ${r.answered} of ${r.asked} (${r.busy} busy), ` +
        `answered in p50 ${Math.round(percentile(waits, 50))} ms p95 ${Math.round(percentile(waits, 95))} ms; the two tenants answered ${r.othersAnswered}`,
    );
  }
} finally {
  await place.close();
}
