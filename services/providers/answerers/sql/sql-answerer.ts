import { AppError } from '../../../model/errors.js';
import type { ChatLlm, TokenUsage } from '../../llm/chat-llm.js';
import type { Answer, Answerer, AnswerRequest } from '../answerer.js';
import { normaliseUpstreamReply } from '../upstream-reply.js';
import { createSchemaCache, introspectSchema, type SchemaTable } from './schema-introspection.js';
import { renderSchema } from './schema-prompt.js';
import { type ConcurrencyLimits, createConcurrencyLimiter } from './sql-concurrency.js';
import type { SqlDatabase, TransactionBounds } from './sql-database.js';
import { type Execution, executeReadOnly } from './sql-execution.js';
import { SlotWaitTimeoutError } from './sql-fair-queue.js';
import { type Generated, type GenerationInput, generateSql, UnusableReplyError } from './sql-generation.js';
import { answerText, executionResult } from './sql-reply.js';

export interface SqlAnswererOptions {
  llm: ChatLlm;
  database: SqlDatabase;
  /** SQL_TABLES: only these are shown to the LLM. */
  tables?: string[];
  maxRows: number;
  /** SQL_MAX_CELL_BYTES and SQL_MAX_RESULT_BYTES: the values read, cut while they are fetched. */
  cellBytes: number;
  resultBytes: number;
  repairAttempts: number;
  schemaMaxTokens: number;
  schemaRefreshMs: number;
  /** Questions one user, and one tenant, may have in the answerer at once. */
  concurrency: ConcurrencyLimits;
  log?: { warn(obj: object, msg: string): void };
  /** Ends the answerer's own pool, or the demo's engine. */
  close: () => Promise<void>;
}

/**
 * The built-in text-to-SQL answerer (ANSWER_BACKEND=sql, docs/design.md §5): the LLM writes one
 * statement from the question, the memory and the schema; the database runs it read-only; a
 * rejected statement goes back to the LLM with the error, up to `repairAttempts` times. The reply has
 * the Denodo answerQuestion shape, so the turn is stored, recalled and exported like an upstream one.
 */
export function createSqlAnswerer(options: SqlAnswererOptions): Answerer {
  const schema = createSchemaCache(
    () => introspectSchema(options.database, options.tables),
    options.schemaRefreshMs,
    (err) => options.log?.warn({ err }, 'refreshing the SQL schema failed; the previous copy stays in use'),
  );
  const limiter = createConcurrencyLimiter(options.concurrency);
  return {
    kind: 'sql',
    async answer(request) {
      const release = request.identity ? limiter.acquire(request.identity) : () => {};
      try {
        return await answer(options, request, schema);
      } finally {
        release();
      }
    },
    close: options.close,
  };
}

interface Cost {
  usage: TokenUsage;
  llmMs: number;
  sqlMs: number;
}

async function answer(options: SqlAnswererOptions, request: AnswerRequest, schema: () => Promise<SchemaTable[]>): Promise<Answer> {
  const started = performance.now();
  const cost: Cost = { usage: { inputTokens: 0, outputTokens: 0 }, llmMs: 0, sqlMs: 0 };
  const tables = await readSchema(schema);
  const memory = request.memory;
  const input: GenerationInput = {
    question: request.question,
    schema: renderSchema(tables, {
      maxTokens: options.schemaMaxTokens,
      usedTables: [...(memory?.history ?? []), ...(memory?.similar ?? [])].flatMap((turn) => turn.tables_used),
      question: request.question,
    }),
    memory: memory?.text || undefined,
    callerInstructions: typeof request.params.custom_instructions === 'string' ? request.params.custom_instructions : undefined,
  };

  let generated = await generate(options.llm, input, cost);
  let execution: Execution | undefined;
  // One budget for the question's statements together, a repair's included: spent while they run.
  const bounds: TransactionBounds = {
    budget: { leftMs: options.database.statementTimeoutMs },
    tenant: request.identity?.tenantId ?? '',
    signal: request.clientGone ?? request.signal,
  };
  for (let repairs = 0; generated.kind === 'sql'; repairs++) {
    execution = await execute(options, generated.sql, cost, bounds);
    if (execution.ok || execution.kind !== 'error' || repairs >= options.repairAttempts) break;
    generated = await generate(options.llm, { ...input, repair: { sql: generated.sql, error: execution.message } }, cost);
  }

  const known = new Set(tables.flatMap((t) => [`${t.schema}.${t.name}`, t.name]));
  const body: Record<string, unknown> = {
    answer: answerText(generated, execution, options),
    sql_query: generated.kind === 'sql' ? generated.sql : '',
    query_explanation: generated.kind === 'sql' ? generated.explanation : '',
    tables_used: generated.tables.filter((t) => known.has(t)),
    execution_result: execution?.ok ? executionResult(execution) : {},
    related_questions: [],
    tokens: {
      input_tokens: cost.usage.inputTokens,
      output_tokens: cost.usage.outputTokens,
      total_tokens: cost.usage.inputTokens + cost.usage.outputTokens,
    },
    sql_execution_time: seconds(cost.sqlMs),
    llm_time: seconds(cost.llmMs),
    total_execution_time: seconds(performance.now() - started),
    ...(execution && !execution.ok ? { sql_error: execution.message } : {}),
    ...(execution?.ok && execution.truncated ? { rows_limited_to: options.maxRows } : {}),
    ...(execution?.ok && execution.bytesLimited ? { result_bytes_limited_to: options.resultBytes } : {}),
    ...(execution?.ok && execution.cellsCut ? { cells_cut_to_bytes: options.cellBytes } : {}),
  };
  const reply = normaliseUpstreamReply(body);
  return { ...reply, ...(generated.kind === 'clarification' ? { asksClarification: true } : {}), latencyMs: performance.now() - started };
}

async function readSchema(schema: () => Promise<SchemaTable[]>): Promise<SchemaTable[]> {
  try {
    return await schema();
  } catch (err) {
    if (isPoolWaitTimeout(err)) throw poolBusy(err);
    throw new AppError('upstream-failed', 'the SQL database could not be read (SQL_DATABASE_URL)', { cause: err });
  }
}

async function generate(llm: ChatLlm, input: GenerationInput, cost: Cost): Promise<Generated> {
  const started = performance.now();
  try {
    const { generated, usage } = await generateSql(llm, input);
    cost.usage.inputTokens += usage.inputTokens;
    cost.usage.outputTokens += usage.outputTokens;
    return generated;
  } catch (err) {
    if (err instanceof UnusableReplyError || err instanceof SyntaxError) {
      throw new AppError('upstream-bad-response', `the LLM's reply could not be used: ${err.message}`);
    }
    // The SDKs' APIConnectionTimeoutError (both name it so; its `name` is plain "Error").
    if (err instanceof Error && (/timeout/i.test(err.constructor.name) || /timed out/i.test(err.message))) {
      throw new AppError('upstream-timeout', 'the LLM did not answer in time (LLM_TIMEOUT_MS)');
    }
    throw new AppError('upstream-failed', `the LLM failed: ${(err as Error).message}`.slice(0, 300), { cause: err });
  } finally {
    cost.llmMs += performance.now() - started;
  }
}

async function execute(options: SqlAnswererOptions, sql: string, cost: Cost, bounds: TransactionBounds): Promise<Execution> {
  try {
    const limits = { maxRows: options.maxRows, cellBytes: options.cellBytes, resultBytes: options.resultBytes };
    const execution = await executeReadOnly(options.database, sql, limits, bounds);
    cost.sqlMs += execution.ms;
    return execution;
  } catch (err) {
    if (isPoolWaitTimeout(err)) throw poolBusy(err);
    throw new AppError('upstream-failed', 'the SQL database could not be reached (SQL_DATABASE_URL)', { cause: err });
  }
}

/** No connection within SQL_POOL_WAIT_MS: the tenant's turn did not come (sql-fair-queue.ts), or pg-pool's connectionTimeoutMillis. */
function isPoolWaitTimeout(err: unknown): boolean {
  return err instanceof SlotWaitTimeoutError || (err instanceof Error && err.message === 'timeout exceeded when trying to connect');
}

function poolBusy(err: unknown): AppError {
  return new AppError('sql-database-busy', 'no connection to the SQL database came free within SQL_POOL_WAIT_MS; ask again shortly', {
    cause: err,
  });
}

function seconds(ms: number): number {
  return Math.round(ms) / 1000;
}
