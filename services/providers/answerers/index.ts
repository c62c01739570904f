import pg from 'pg';
import type { Config } from '../../config/config.js';
import { unreachable } from '../../model/unreachable.js';
import type { ChatLlm } from '../llm/chat-llm.js';
import type { Answerer } from './answerer.js';
import { noneAnswerer } from './none-answerer.js';
import { createSqlAnswerer } from './sql/sql-answerer.js';
import { serverSqlDatabase } from './sql/sql-database.js';
import { createFairQueue } from './sql/sql-fair-queue.js';
import { createUpstreamAnswerer } from './upstream-answerer.js';
import { upstreamCredentials } from './upstream-auth.js';

export type { Answer, Answerer, AnswerMemory, AnswerRequest } from './answerer.js';

/** SQL_DATABASE_URL=embedded-demo: the demo's engine (db/demo/demo-engine.ts), as the answerer uses it. */
export interface DemoSqlEngine {
  role: string;
  connect(): Promise<pg.PoolClient>;
  /** Ends whatever the engine runs: the cancel past a question's budget, or when its client went away. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface AnswererParts {
  /** The LLM_PROVIDER model, which the sql answerer writes its SQL with. */
  llm?: ChatLlm;
  /** SQL_DATABASE_URL=embedded-demo: the demo dataset's engine, started by the API process; the answerer closes it. */
  demoEngine?: DemoSqlEngine;
  log?: { warn(obj: object, msg: string): void; info?(obj: object, msg: string): void };
}

export function createAnswerer(config: Config, parts: AnswererParts = {}): Answerer {
  switch (config.answerBackend) {
    case 'upstream':
      return upstreamAnswerer(config, parts);
    case 'sql':
      // Without an LLM or a database to run on (a process that answers no questions) there is nothing to answer with.
      return (parts.llm && sqlAnswerer(config, parts.llm, parts)) ?? noneAnswerer;
    case 'none':
      return noneAnswerer;
    default:
      return unreachable(config.answerBackend, 'ANSWER_BACKEND');
  }
}

function upstreamAnswerer(config: Config, parts: AnswererParts): Answerer {
  return createUpstreamAnswerer({
    url: config.ANSWER_URL!,
    ...upstreamCredentials(config),
    operatorInstructions: config.ANSWER_OPERATOR_INSTRUCTIONS,
    listFields: config.ANSWER_LIST_FIELDS,
    requestIdHeader: config.ANSWER_REQUEST_ID_HEADER,
    timeoutMs: config.ANSWER_TIMEOUT_MS,
    maxReplyBytes: config.ANSWER_MAX_REPLY_BYTES,
    log: parts.log,
  });
}

function sqlAnswerer(config: Config, llm: ChatLlm, parts: AnswererParts): Answerer | undefined {
  const limits = {
    llm,
    tables: config.sqlTables,
    maxRows: config.SQL_MAX_ROWS,
    cellBytes: config.SQL_MAX_CELL_BYTES,
    resultBytes: config.SQL_MAX_RESULT_BYTES,
    repairAttempts: config.SQL_REPAIR_ATTEMPTS,
    schemaMaxTokens: config.SQL_SCHEMA_MAX_TOKENS,
    schemaRefreshMs: config.sqlSchemaRefreshMs,
    concurrency: { perUser: config.SQL_MAX_CONCURRENT_PER_USER, perTenant: config.SQL_MAX_CONCURRENT_PER_TENANT },
    log: parts.log,
  };
  const database = {
    schemas: config.sqlSchemas,
    statementTimeoutMs: config.SQL_STATEMENT_TIMEOUT_MS,
    maxPlanCost: config.sqlMaxPlanCost,
  };
  if (config.SQL_DATABASE_URL !== 'embedded-demo') {
    const pool = new pg.Pool({
      connectionString: config.SQL_DATABASE_URL,
      max: config.SQL_POOL_MAX,
      connectionTimeoutMillis: config.SQL_POOL_WAIT_MS,
    });
    // An idle connection that breaks is dropped and the next statement reconnects, as in db/pool.ts.
    pool.on('error', (err) => parts.log?.warn({ err }, 'an idle SQL_DATABASE_URL connection failed'));
    const queue = createFairQueue(config.SQL_POOL_MAX, config.SQL_POOL_WAIT_MS);
    return createSqlAnswerer({ ...limits, database: serverSqlDatabase(pool, { ...database, queue }), close: () => pool.end() });
  }
  const engine = parts.demoEngine;
  if (engine) {
    return createSqlAnswerer({
      ...limits,
      // The engine has one connection.
      database: {
        ...database,
        role: engine.role,
        connect: engine.connect,
        cancel: engine.restart,
        queue: createFairQueue(1, config.SQL_POOL_WAIT_MS),
      },
      close: engine.close,
    });
  }
  // The worker answers no questions: it gets no embedded demo, and no pool of its own.
  return undefined;
}
