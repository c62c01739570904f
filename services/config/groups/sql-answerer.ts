import Type, { type Static } from 'typebox';
import { DURATION_PATTERN } from '../duration.js';

/** The built-in text-to-SQL answerer (ANSWER_BACKEND=sql): its database and bounds. */
export const SqlAnswererSchema = Type.Object({
  // ANSWER_BACKEND=sql (docs/design.md §5): the database the LLM's SQL runs on (a read-only login is
  // required: sql-login-check.ts), or `embedded-demo` for the demo dataset in an embedded engine of its own.
  SQL_DATABASE_URL: Type.Optional(Type.String({ pattern: '^(postgres(ql)?://|embedded-demo$)' })),
  // Comma-separated schemas the LLM is shown and the SQL's search_path; default `public` (`demo` for embedded-demo).
  SQL_SCHEMAS: Type.Optional(Type.String({ pattern: '^[^,]+(,[^,]+)*$' })),
  // Comma-separated `table` or `schema.table` names: only these are shown to the LLM.
  SQL_TABLES: Type.Optional(Type.String({ pattern: '^[^,]+(,[^,]+)*$' })),
  SQL_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 15_000 }),
  // A query the planner estimates above this cost is not run (default 20000 with embedded-demo, which cannot time out).
  SQL_MAX_PLAN_COST: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
  // Rows kept in `execution_result`; the statement is read through a cursor, so at most one more is fetched.
  SQL_MAX_ROWS: Type.Integer({ minimum: 1, maximum: 10_000, default: 100 }),
  // A value's text beyond this many bytes is cut (with a marker) by the database, before it is fetched.
  SQL_MAX_CELL_BYTES: Type.Integer({ minimum: 64, maximum: 10_485_760, default: 16_384 }),
  // Rows past this many bytes of values are not fetched (the reply says so).
  SQL_MAX_RESULT_BYTES: Type.Integer({ minimum: 1024, maximum: 104_857_600, default: 1_048_576 }),
  // Times the LLM may correct its SQL after the database rejected it.
  SQL_REPAIR_ATTEMPTS: Type.Integer({ minimum: 0, maximum: 3, default: 1 }),
  SQL_SCHEMA_MAX_TOKENS: Type.Integer({ minimum: 200, maximum: 100_000, default: 4000 }),
  // How old the introspected schema may get before it is read again.
  SQL_SCHEMA_REFRESH: Type.String({ pattern: DURATION_PATTERN, default: '10m' }),
  SQL_POOL_MAX: Type.Integer({ minimum: 1, maximum: 100, default: 4 }),
  // How long a statement waits for a connection (or for the demo's engine to restart) before 503 sql-database-busy.
  SQL_POOL_WAIT_MS: Type.Integer({ minimum: 1, default: 5000 }),
  // Questions one user / one tenant may have in the sql answerer at once, per API process (429 sql-queries-limited beyond).
  SQL_MAX_CONCURRENT_PER_USER: Type.Integer({ minimum: 1, default: 2 }),
  SQL_MAX_CONCURRENT_PER_TENANT: Type.Integer({ minimum: 1, default: 3 }),
});

export type SqlAnswererVariables = Static<typeof SqlAnswererSchema>;
