import pg from 'pg';
import { type Fetched, type FetchLimits, fetchBounded } from './bounded-fetch.js';
import { inReadOnlyTransaction, type SqlDatabase, StatementEndedError, type TransactionBounds } from './sql-database.js';

export type Execution =
  | ({ ok: true; ms: number } & Fetched)
  /**
   * `refused`: the database would not run it as a read-only query (a write, a privilege); `timeout`:
   * cancelled by statement_timeout or ended past the question's budget; `cancelled`: the client that asked went
   * away; `error`: anything else, which the LLM may repair.
   */
  | { ok: false; kind: 'refused' | 'timeout' | 'cancelled' | 'error'; message: string; ms: number };

const CURSOR = 'memorychat_answer';
const DECLARE = `DECLARE ${CURSOR} NO SCROLL CURSOR FOR `;

/**
 * Runs the LLM's statement with the database as the judge of what it may do:
 * - `DECLARE … CURSOR FOR` accepts a query only (SELECT, VALUES, TABLE, WITH without data-modifying
 *   parts): an INSERT, a DO block or a SET is a syntax error there;
 * - the extended query protocol (`queryMode: 'extended'`) refuses more than one statement;
 * - the READ ONLY transaction refuses writes from inside a query (nextval, a function that writes);
 * - the service ends it when the question's time is spent, whatever the statement did to
 *   statement_timeout (sql-database.ts), and with `maxPlanCost` a query the planner prices above it
 *   is not fetched;
 * - the rows are read bounded in count and bytes (bounded-fetch.ts): at most `maxRows + 1`, the one
 *   more telling that the result was cut.
 */
export async function executeReadOnly(db: SqlDatabase, sql: string, limits: FetchLimits, bounds: TransactionBounds): Promise<Execution> {
  const statement = sql.trim().replace(/;\s*$/, '');
  const started = performance.now();
  const ms = () => performance.now() - started;
  try {
    return await inReadOnlyTransaction(
      db,
      async (client) => {
        // pg takes queryMode (8.11+); its type definitions do not list it yet.
        await client.query({ text: DECLARE + statement, queryMode: 'extended' } as pg.QueryConfig);
        const cost = db.maxPlanCost === undefined ? undefined : await planCost(client, statement);
        if (cost !== undefined && cost > db.maxPlanCost!) {
          const message = `the planner estimates this query at cost ${Math.round(cost)}, above the limit of ${db.maxPlanCost}: write a cheaper one`;
          return { ok: false, kind: 'error', message, ms: ms() };
        }
        const fetched = await fetchBounded(client, CURSOR, statement, limits);
        return { ok: true, ...fetched, ms: ms() };
      },
      bounds,
    );
  } catch (err) {
    if (err instanceof StatementEndedError) {
      const message =
        err.reason === 'timeout'
          ? `statement timeout: the question's SQL was ended after ${db.statementTimeoutMs} ms`
          : 'cancelled: the client that asked went away';
      return { ok: false, kind: err.reason, message, ms: ms() };
    }
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
