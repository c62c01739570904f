import type { DatabaseVariables } from '../groups/database.js';
import type { MemoryVariables } from '../groups/memory.js';
import type { ModelsVariables } from '../groups/models.js';
import type { SqlAnswererVariables } from '../groups/sql-answerer.js';
import type { UpstreamAnswererVariables } from '../groups/upstream-answerer.js';

/** The variables an answer backend's checks and defaults read. */
export type AnswererVariables = UpstreamAnswererVariables &
  SqlAnswererVariables &
  Pick<ModelsVariables, 'LLM_PROVIDER'> &
  Pick<DatabaseVariables, 'DATABASE_URL'> &
  Pick<MemoryVariables, 'MEMORY_AUGMENTATION' | 'MEMORY_MAX_CONTEXT_TOKENS'>;

/** What one answer backend settles in the configuration: what it refuses, and its defaults. */
export interface AnswererSettings {
  /** Throws a ConfigError for a configuration this backend cannot answer with. */
  check(raw: AnswererVariables): void;
  /** ANSWER_AUTH when unset. */
  defaultAuth: 'forward' | 'none';
  /** MEMORY_MAX_CONTEXT_TOKENS when unset. */
  defaultMaxContextTokens: number;
  /** It sends each caller's own credentials upstream with ANSWER_AUTH=forward (a linked account's token among them). */
  forwardsCallers: boolean;
}
