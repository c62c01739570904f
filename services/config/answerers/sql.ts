import { ConfigError } from '../config-error.js';
import { parseDurationMs } from '../duration.js';
import type { SqlAnswererVariables } from '../groups/sql-answerer.js';
import type { AnswererSettings } from './answerer-settings.js';

/** ANSWER_BACKEND=sql: the built-in text-to-SQL answerer (docs/design.md §5). */
export const sqlAnswererSettings: AnswererSettings = {
  check(raw) {
    if (!raw.SQL_DATABASE_URL) {
      throw new ConfigError('SQL_DATABASE_URL: required when ANSWER_BACKEND=sql (a postgres:// URL, or embedded-demo)');
    }
    if (!raw.LLM_PROVIDER) throw new ConfigError('LLM_PROVIDER: required when ANSWER_BACKEND=sql (openai or anthropic)');
    if (raw.SQL_DATABASE_URL === 'embedded-demo' && raw.DATABASE_URL) {
      throw new ConfigError(
        'SQL_DATABASE_URL: embedded-demo lives in the embedded database; unset DATABASE_URL, or point SQL_DATABASE_URL at a server',
      );
    }
    if (raw.MEMORY_AUGMENTATION === 'inline') {
      // The sql answerer puts the memory block in its own prompt; inline would put it in the question too.
      throw new ConfigError('MEMORY_AUGMENTATION: inline is not used with ANSWER_BACKEND=sql; use instructions or rewrite');
    }
  },
  defaultAuth: 'none',
  defaultMaxContextTokens: 4000,
  // Its SQL runs as its own read-only login, whoever asks.
  forwardsCallers: false,
};

/** PGlite does not enforce statement_timeout, so the embedded demo keeps out what the planner knows to be expensive. */
const EMBEDDED_DEMO_MAX_PLAN_COST = 20_000;

/** The sql answerer's SQL_* settings with their defaults, which depend on its database (the demo's own). */
export function deriveSqlAnswerer(raw: SqlAnswererVariables) {
  const embeddedDemo = raw.SQL_DATABASE_URL === 'embedded-demo';
  const maxPlanCost = raw.SQL_MAX_PLAN_COST ?? (embeddedDemo ? EMBEDDED_DEMO_MAX_PLAN_COST : undefined);
  return {
    /** The schemas the sql answerer shows the LLM (SQL_SCHEMAS, or the demo's). */
    sqlSchemas: listOf(raw.SQL_SCHEMAS) ?? [embeddedDemo ? 'demo' : 'public'],
    ...(raw.SQL_TABLES ? { sqlTables: listOf(raw.SQL_TABLES) } : {}),
    sqlSchemaRefreshMs: parseDurationMs(raw.SQL_SCHEMA_REFRESH),
    ...(maxPlanCost === undefined ? {} : { sqlMaxPlanCost: maxPlanCost }),
  };
}

function listOf(value: string | undefined): string[] | undefined {
  const items = value
    ?.split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  return items?.length ? items : undefined;
}
