import pg from 'pg';
import { inReadOnlyTransaction, type SqlDatabase } from './sql-database.js';

export type Execution =
  | { ok: true; columns: string[]; rows: (string | null)[][]; truncated: boolean; ms: number }
  /**
   * `refused`: the database would not run it as a read-only query (a write, a privilege); `timeout`:
   * cancelled by statement_timeout; `error`: anything else, which the LLM may repair.
   */
  | { ok: false; kind: 'refused' | 'timeout' | 'error'; message: string; ms: number };

const CURSOR = 'memorychat_answer';
const DECLARE = `DECLARE ${CURSOR} NO SCROLL CURSOR FOR `;

/** Every value as Postgres prints it: no Date shifted by the time zone, no numeric rounded. */
const AS_TEXT = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

/**
 * Runs the LLM's statement with the database as the judge of what it may do:
 * - `DECLARE … CURSOR FOR` accepts a query only (SELECT, VALUES, TABLE, WITH without data-modifying
 *   parts): an INSERT, a DO block or a SET is a syntax error there;
 * - the extended query protocol (`queryMode: 'extended'`) refuses more than one statement;
 * - the READ ONLY transaction refuses writes from inside a query (nextval, a function that writes);
 * - statement_timeout cancels it, and with `maxPlanCost` a query the planner prices above it is not
 *   fetched (where the timeout is not enforced: PGlite); FETCH reads at most `maxRows + 1` rows, the one more telling that
 *   the result was cut.
 */
export async function executeReadOnly(db: SqlDatabase, sql: string, maxRows: number): Promise<Execution> {
  const statement = sql.trim().replace(/;\s*$/, '');
  const started = performance.now();
  const ms = () => performance.now() - started;
  try {
    return await inReadOnlyTransaction(db, async (client) => {
      // pg takes queryMode (8.11+); its type definitions do not list it yet.
      await client.query({ text: DECLARE + statement, queryMode: 'extended' } as pg.QueryConfig);
      const cost = db.maxPlanCost === undefined ? undefined : await planCost(client, statement);
      if (cost !== undefined && cost > db.maxPlanCost!) {
        const message = `the planner estimates this query at cost ${Math.round(cost)}, above the limit of ${db.maxPlanCost}: write a cheaper one`;
        return { ok: false, kind: 'error', message, ms: ms() };
      }
      const result = await client.query({ text: `FETCH FORWARD ${maxRows + 1} FROM ${CURSOR}`, rowMode: 'array', types: AS_TEXT });
      const rows = result.rows as (string | null)[][];
      const columns = result.fields.map((f) => f.name);
      return { ok: true, columns, rows: rows.slice(0, maxRows), truncated: rows.length > maxRows, ms: ms() };
    });
  } catch (err) {
    // Anything but the database's verdict on the statement (the database unreachable) is the answerer failing.
    if (!(err instanceof pg.DatabaseError)) throw err;
    return { ok: false, kind: kindOf(err), message: err.message, ms: ms() };
  }
}

/** Only after DECLARE took the statement as a query: EXPLAIN alone would plan a DELETE too (without running it). */
async function planCost(client: pg.PoolClient, statement: string): Promise<number> {
  const plan = await client.query<{ 'QUERY PLAN': [{ Plan: { 'Total Cost': number } }] }>({
    text: `EXPLAIN (FORMAT JSON) ${statement}`,
    queryMode: 'extended',
  } as pg.QueryConfig);
  return plan.rows[0]!['QUERY PLAN'][0].Plan['Total Cost'];
}

function kindOf(err: pg.DatabaseError): 'refused' | 'timeout' | 'error' {
  if (err.code === '57014') return 'timeout';
  // read_only_sql_transaction, insufficient_privilege, a data-modifying WITH in the cursor.
  if (err.code === '25006' || err.code === '42501' || err.code === '0A000') return 'refused';
  // A syntax error at the statement's first word: the database did not take the statement as a query.
  if (err.code === '42601' && Number(err.position) === DECLARE.length + 1) return 'refused';
  return 'error';
}
