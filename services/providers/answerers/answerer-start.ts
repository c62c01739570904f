import type pg from 'pg';
import type { Config } from '../../config/config.js';
import { unreachable } from '../../model/unreachable.js';
import type { DemoSqlEngine } from './index.js';
import { checkConfiguredSqlLogin } from './sql/sql-login-check.js';
import { answerAuthNotice } from './upstream-auth.js';

export interface AnswererStartDeps<E extends DemoSqlEngine> {
  /** The memory database, which the sql answerer's login must not reach (sql/sql-login-check.ts). */
  memory: Pick<pg.Pool, 'query'>;
  /** Starts the embedded demo's engine (db/demo/demo-engine.ts), which lives in the API process. */
  startDemoEngine(): Promise<E>;
}

/**
 * What each answer backend needs done before the API serves, once the memory database is migrated:
 * the sql answerer's demo engine started (SQL_DATABASE_URL=embedded-demo) and its login refused if it
 * could reach the memory. Returns the engine for createProviders, whose answerer closes it; a failed
 * check closes it here.
 */
export async function prepareAnswerer<E extends DemoSqlEngine>(config: Config, deps: AnswererStartDeps<E>): Promise<{ demoEngine?: E }> {
  switch (config.answerBackend) {
    case 'sql': {
      const demoEngine = config.SQL_DATABASE_URL === 'embedded-demo' ? await deps.startDemoEngine() : undefined;
      try {
        await checkConfiguredSqlLogin(config, deps.memory, demoEngine);
      } catch (err) {
        await demoEngine?.close();
        throw err;
      }
      return demoEngine ? { demoEngine } : {};
    }
    case 'upstream':
    case 'none':
      return {};
    default:
      return unreachable(config.answerBackend, 'ANSWER_BACKEND');
  }
}

/** What the service says about its answerer once ready, and how loudly: how upstream requests authenticate. */
export function answererNotice(config: Config): { level: 'info' | 'warn'; message: string } | undefined {
  switch (config.answerBackend) {
    case 'upstream':
      return answerAuthNotice(config.answerAuth);
    case 'sql':
    case 'none':
      return undefined;
    default:
      return unreachable(config.answerBackend, 'ANSWER_BACKEND');
  }
}
