import pg from 'pg';
import type { Config } from '../../config/config.js';
import type { ChatLlm } from '../llm/chat-llm.js';
import type { Answerer } from './answerer.js';
import { noneAnswerer } from './none-answerer.js';
import { createSqlAnswerer } from './sql/sql-answerer.js';
import { createUpstreamAnswerer } from './upstream-answerer.js';

export type { Answer, Answerer, AnswerMemory, AnswerRequest } from './answerer.js';

/** The embedded database's pool and the role that reads only the demo schema (db/demo/demo-dataset.ts). */
export interface EmbeddedSqlDatabase {
  pool: pg.Pool;
  role: string;
}

export interface AnswererParts {
  /** The LLM_PROVIDER model, which the sql answerer writes its SQL with. */
  llm?: ChatLlm;
  /** SQL_DATABASE_URL=embedded-demo: the demo dataset, loaded by the API process that opened the embedded database. */
  embeddedSql?: EmbeddedSqlDatabase;
  log?: { warn(obj: object, msg: string): void };
}

export function createAnswerer(config: Config, parts: AnswererParts = {}): Answerer {
  if (config.answerBackend === 'upstream') {
    return createUpstreamAnswerer({
      url: config.ANSWER_URL!,
      auth: config.answerAuth,
      basicUser: config.ANSWER_BASIC_USER,
      basicPassword: config.ANSWER_BASIC_PASSWORD,
      bearerToken: config.ANSWER_BEARER_TOKEN,
      operatorInstructions: config.ANSWER_OPERATOR_INSTRUCTIONS,
      timeoutMs: config.ANSWER_TIMEOUT_MS,
      log: parts.log,
    });
  }
  if (config.answerBackend === 'sql' && parts.llm) {
    const limits = {
      llm: parts.llm,
      tables: config.sqlTables,
      maxRows: config.SQL_MAX_ROWS,
      repairAttempts: config.SQL_REPAIR_ATTEMPTS,
      schemaMaxTokens: config.SQL_SCHEMA_MAX_TOKENS,
      schemaRefreshMs: config.sqlSchemaRefreshMs,
      log: parts.log,
    };
    const database = {
      schemas: config.sqlSchemas,
      statementTimeoutMs: config.SQL_STATEMENT_TIMEOUT_MS,
      maxPlanCost: config.sqlMaxPlanCost,
    };
    if (config.SQL_DATABASE_URL !== 'embedded-demo') {
      const pool = new pg.Pool({ connectionString: config.SQL_DATABASE_URL, max: config.SQL_POOL_MAX });
      // An idle connection that breaks is dropped and the next statement reconnects, as in db/pool.ts.
      pool.on('error', (err) => parts.log?.warn({ err }, 'an idle SQL_DATABASE_URL connection failed'));
      return createSqlAnswerer({ ...limits, database: { ...database, pool }, close: () => pool.end() });
    }
    if (parts.embeddedSql) return createSqlAnswerer({ ...limits, database: { ...database, ...parts.embeddedSql } });
  }
  // The worker answers no questions: it gets no embedded demo, and no pool of its own.
  return noneAnswerer;
}
