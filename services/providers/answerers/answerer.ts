import type { AnswerBackend } from '../../model/answer-backends.js';
import type { Identity } from '../../model/identity.js';
import type { HistoryTurn, TurnStatus } from '../../model/turns.js';

/** The memory /memoryChat built for the question (docs/design.md §4), for answerers that write their own prompt. */
export interface AnswerMemory {
  /** The rendered `<conversation_memory>` block, '' when there is none. */
  text: string;
  /** The window turns that made it into the block, oldest first. */
  history: HistoryTurn[];
  /** The similar past turns that made it into the block. */
  similar: HistoryTurn[];
}

export interface AnswerRequest {
  question: string;
  /** Who asks: the sql answerer bounds its concurrent questions per user and per tenant; a linked account is the user's (core/linking). */
  identity?: Pick<Identity, 'tenantId' | 'userId' | 'apiKeyId'>;
  customInstructions?: string;
  /** The views the answerer must consider (`use_views`): the caller's and those memory relies on. */
  useViews?: string[];
  /** answerQuestion parameters from the caller, forwarded as given. */
  params: Record<string, unknown>;
  /** The caller's `X-Upstream-Authorization` header, for ANSWER_AUTH=forward. */
  upstreamAuthorization?: string;
  /** memorychat's request id, sent upstream in ANSWER_REQUEST_ID_HEADER. */
  requestId?: string;
  memory?: AnswerMemory;
  /** Aborted when the client of a streamed reply has gone away: the upstream call is abandoned. */
  signal?: AbortSignal;
  /**
   * Aborted when the client of any reply has gone away: the sql answerer cancels its running
   * statement, which only holds a connection others wait for (the upstream answer still completes
   * and is stored, for the client's retry).
   */
  clientGone?: AbortSignal;
}

export interface Answer {
  /** The answerer's reply fields, normalised (tables_used always an array). */
  fields: Record<string, unknown> & { answer: string; tables_used: string[] };
  /** The answer as memory keeps it, when it differs from what the caller is shown (the SDK's DISCLAIMER removed). */
  storedAnswer?: string;
  status: TurnStatus;
  sqlQuery: string | null;
  /**
   * The answer is a question back to the user (the SDK's ambiguity check, the sql answerer's
   * clarification): the user's next turn answers it, and `tables_used` are the candidate views.
   */
  asksClarification?: boolean;
  /** How long the answerer took, in milliseconds. */
  latencyMs: number;
}

export interface Answerer {
  readonly kind: AnswerBackend;
  answer(request: AnswerRequest): Promise<Answer>;
  /** Releases what the answerer holds (the sql answerer's pool, the upstream answerer's keep-alive connections). */
  close?(): Promise<void>;
}
