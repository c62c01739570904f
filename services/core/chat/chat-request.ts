import type { Identity } from '../../model/identity.js';
import type { MemoryScope } from '../context/recall-memory.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';

export interface MemoryChatRequest {
  identity: Identity;
  question: string;
  sessionId?: string;
  /** The client's own key for the conversation: its live session, created at the first message. */
  sessionKey?: string;
  sessionName?: string;
  useMemory: boolean;
  /** Recognise memory commands ("show me the SQL", "/clear"): MEMORY_COMMANDS and the request's `memory_commands`. */
  memoryCommands: boolean;
  maxHistoryTurns?: number;
  semanticSearchK?: number;
  memoryScope?: MemoryScope;
  /** answerQuestion parameters, forwarded as given (custom_instructions is merged with memory). */
  params: Record<string, unknown>;
  upstreamAuthorization?: string;
  /** This request's id (X-Request-ID): the answerer gets it, to follow one question through both services' logs. */
  requestId?: string;
  /** Aborts when the client has gone away, streamed reply or not (AnswerRequest.clientGone). */
  clientGone?: AbortSignal;
  /** The request's Idempotency-Key claim: completed in the transaction that stores the turn. */
  idempotency?: IdempotencyClaim;
}

/**
 * Where a streamed reply goes (`Accept: text/event-stream`): the memory metadata once the context is
 * built, then the answer text as it arrives. `signal` aborts when the client goes away.
 */
export interface ChatStream {
  signal: AbortSignal;
  memory(event: Record<string, unknown>): void;
  text(chunk: string): void;
}

/** The client of a streamed reply went away before the answer was complete; the turn is stored as `incomplete`. */
export class ClientGoneError extends Error {
  override name = 'ClientGoneError';
}
