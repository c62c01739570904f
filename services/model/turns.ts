/**
 * The conversation turn as db, providers and core all see it. Rows are named as Postgres returns
 * them (snake_case); a turn on its way in (NewTurn) is named as the code builds it.
 */

/**
 * How a turn ended; only `ok` turns carry SQL into later context (docs/design.md §4). A
 * `memory_command` ("show me the SQL", "/clear") was answered from memory and an `incomplete` turn's
 * streaming client went away: neither is history for later questions.
 */
export type TurnStatus = 'ok' | 'clarification' | 'failed' | 'upstream_error' | 'memory_command' | 'incomplete';

/** Statuses a client may give a turn it stores or corrects itself. */
export type ClientTurnStatus = 'ok' | 'clarification' | 'failed';

export interface HistoryTurn {
  turn_number: number;
  status: TurnStatus;
  question: string;
  answer: string;
  sql_query: string | null;
  tables_used: string[];
  created_at: Date;
  /** The answer asked the user to clarify the question: the next turn answers it, and tables_used are the candidates. */
  asks_clarification?: boolean;
  /** The turn's stored message chain, when the retrieval asked for it. */
  messages?: unknown;
}

export interface SimilarTurn extends HistoryTurn {
  session_id: string;
  similarity: number;
}

/** A recent question of a session: what a new turn of it may nearly repeat (dedup). */
export interface RecentQuestion {
  turn_number: number;
  question: string;
  duplicate_of: number | null;
}

export interface NewTurn {
  status: TurnStatus;
  question: string;
  augmentedQuestion: string | null;
  answer: string;
  sqlQuery: string | null;
  queryExplanation: string | null;
  tablesUsed: string[];
  vdpDatabaseNames: string[];
  /** Who wrote its SQL (services/config/answerer-identity.ts); none for a turn a client stored through the memory API. */
  answerer?: string | null;
  executionResult: unknown;
  metadata: Record<string, unknown>;
  embedding: number[] | null;
  embeddingModel: string;
  /** Its lexical terms, a tsvector literal (services/core/search-terms/lexical-terms.ts). */
  searchTerms: string;
  /** The turn's message chain as stored by the memory API: `{ format, messages }`. */
  messages?: unknown;
  /** Structured slots to carry forward; merged into the session's slots (null removes a slot). */
  context?: Record<string, unknown> | null;
  /** The recent turn of the same session this one nearly repeats. */
  duplicateOf?: number | null;
  /** Accounting (docs/memory-api.md): the answerer's reported tokens and the time spent, in ms. */
  accounting?: TurnAccounting;
  vdpTagNames?: string[];
}

export interface TurnAccounting {
  tokens: unknown;
  memoryRetrievalMs: number | null;
  answererMs: number | null;
  totalMs: number | null;
}

/** `ref` of `/sessions/{id}/turns/{ref}/sql`: a turn number, or a position among turns with SQL. */
export type TurnRef = { number: number } | { position: 'first' | 'last' | 'previous' };
