import { answererIdentity } from '../config/answerer-identity.js';
import type { Config } from '../config/config.js';
import type { ScopedDatabase } from '../db/row-security.js';
import type { Identity } from '../model/identity.js';
import type { TurnStatus } from '../model/turns.js';
import type { Answerer } from '../providers/answerers/answerer.js';
import type { ViewPermissions } from '../providers/answerers/view-permissions.js';
import type { Embedder } from '../providers/embeddings/embedder.js';
import type { ChatLlm } from '../providers/llm/chat-llm.js';

/** MEMORY_AUGMENTATION: how memory is sent to the answerer (chat/augment.ts). */
export type AugmentationStrategy = Config['MEMORY_AUGMENTATION'];

/** MEMORY_ENABLED, MEMORY_ROLLOUT_PERCENT, MEMORY_ROLLOUT_TENANTS and MEMORY_STORE_OUTSIDE_ROLLOUT (docs/privacy.md#rollout). */
export interface RolloutSettings {
  enabled: boolean;
  percent: number;
  /** Per-tenant percentages that replace `percent` for that tenant. */
  tenantPercent: ReadonlyMap<string, number>;
  /** Whether the turns of users outside the rollout are stored (for later memory and comparison). */
  storeOutside: boolean;
}

/** MEMORY_STORE_RESULT_ROWS and MEMORY_STORE_RESULT_BYTES: how much of an answer's result rows a turn keeps. */
export interface ResultLimits {
  /** Rows kept; 0 keeps none. */
  maxRows: number;
  /** The stored result's size as JSON, in UTF-8 bytes. */
  maxBytes: number;
}

/** MEMORY_PII: leave stored text as written, replace PII by its kind, or by a keyed hash of it. */
export type PiiMode = 'off' | 'mask' | 'hash';

/** Masks the personal data in text before it is stored or embedded (docs/privacy.md); privacy/pii.ts makes it. */
export interface PiiMasker {
  readonly mode: PiiMode;
  text(value: string): string;
  /** Nullable text, as turns carry it. */
  optionalText(value: string | null): string | null;
  /** A JSON value (slots, metadata, message chains, result rows): every string in it, keys kept. */
  json<T>(value: T): T;
  /** SQL: only the PII inside its string literals, so identifiers and structure stay as written. */
  sql(value: string | null): string | null;
  /** Whether stored SQL has a masked literal (whatever the mode now: it may have been masked before). */
  hasMaskedLiteral(sql: string): boolean;
}

/** The memory settings of docs/design.md §4 and §6, read from config once. */
export interface MemorySettings {
  /** MEMORY_MAX_HISTORY_MESSAGES: the /memoryChat window when the request names none. */
  maxHistoryTurns: number;
  semanticSearchK: number;
  minSimilarity: number;
  /** MEMORY_EXACT_SEARCH_MAX_TURNS: past this many turns, a user's similar turns are found approximately. */
  exactSearchMaxTurns: number;
  maxContextTokens: number;
  maxQuestionChars: number;
  augmentation: AugmentationStrategy;
  ttlMs: number;
  ttlMode: 'sliding' | 'absolute';
  /** MEMORY_MAX_TURNS_PER_SESSION: the memory API's window; no window is longer, whatever the request asks. */
  maxTurnsPerSession: number;
  dedupSimilarity: number;
  /** MEMORY_STORE_RESULT_ROWS and MEMORY_STORE_RESULT_BYTES. */
  storedResult: ResultLimits;
  /** MEMORY_STORE_TEXT_BYTES: the most UTF-8 bytes of each stored text. */
  storedTextBytes: number;
  /** ANSWER_MAX_REPLY_BYTES: the most bytes a /memoryChat reply carries as JSON. */
  maxReplyBytes: number;
  /** Who gets memory on /memoryChat: MEMORY_ENABLED, MEMORY_ROLLOUT_PERCENT, MEMORY_ROLLOUT_TENANTS. */
  rollout: RolloutSettings;
  /** The configured answerer as stored with its turns; /memoryChat recalls across sessions only its own. */
  answererIdentity: string;
}

export function memorySettingsFrom(config: Config): MemorySettings {
  return {
    maxHistoryTurns: config.MEMORY_MAX_HISTORY_MESSAGES,
    semanticSearchK: config.MEMORY_SEMANTIC_SEARCH_K,
    minSimilarity: config.MEMORY_MIN_SIMILARITY,
    exactSearchMaxTurns: config.MEMORY_EXACT_SEARCH_MAX_TURNS,
    maxContextTokens: config.MEMORY_MAX_CONTEXT_TOKENS,
    maxQuestionChars: config.MEMORY_MAX_QUESTION_CHARS,
    augmentation: config.MEMORY_AUGMENTATION,
    ttlMs: config.memoryTtlMs,
    ttlMode: config.MEMORY_TTL_MODE,
    maxTurnsPerSession: config.MEMORY_MAX_TURNS_PER_SESSION,
    dedupSimilarity: config.MEMORY_DEDUP_SIMILARITY,
    storedResult: { maxRows: config.MEMORY_STORE_RESULT_ROWS, maxBytes: config.MEMORY_STORE_RESULT_BYTES },
    storedTextBytes: config.MEMORY_STORE_TEXT_BYTES,
    maxReplyBytes: config.ANSWER_MAX_REPLY_BYTES,
    rollout: {
      enabled: config.MEMORY_ENABLED,
      percent: config.MEMORY_ROLLOUT_PERCENT,
      tenantPercent: config.rolloutTenantPercent,
      storeOutside: config.MEMORY_STORE_OUTSIDE_ROLLOUT,
    },
    answererIdentity: answererIdentity(config),
  };
}

export interface TurnStoredEvent {
  identity: Identity;
  sessionId: string;
  turnCount: number;
  lastTurnNumber: number;
  summaryThroughTurn: number | null;
}

/** The collaborators every memory operation works with; createMemory (create-memory.ts) assembles them once. */
export interface MemoryDeps {
  db: ScopedDatabase;
  embedder: Embedder;
  answerer: Answerer;
  /** The question-rewriting LLM (LLM_PROVIDER), when configured. */
  llm?: ChatLlm;
  /** Which views a caller may read now, with an upstream Denodo AI SDK (core/views/readable-memory.ts). */
  viewPermissions?: ViewPermissions;
  clock: () => Date;
  settings: MemorySettings;
  /** Masks personal data in everything stored or embedded (MEMORY_PII). */
  pii: PiiMasker;
  log: { warn(obj: object, msg: string): void };
  /** Called once a turn is stored: queues summarization when the session is due (docs/design.md §7). */
  afterTurnStored?: (event: TurnStoredEvent) => Promise<unknown>;
  /** Told of every turn written, whatever its status (metrics: store growth, conversation length). */
  turnWritten?: (turn: { status: TurnStatus; sessionTurns: number }) => void;
}
