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
  customInstructions?: string;
  /** The views the answerer must consider (`use_views`): the caller's and those memory relies on. */
  useViews?: string;
  /** answerQuestion parameters from the caller, forwarded as given. */
  params: Record<string, unknown>;
  /** The caller's `X-Upstream-Authorization` header, for ANSWER_AUTH=forward. */
  upstreamAuthorization?: string;
  memory?: AnswerMemory;
  /** Aborted when the client that asked has gone away: the upstream call is abandoned. */
  signal?: AbortSignal;
}

export interface Answer {
  /** The answerer's reply fields, normalised (tables_used always an array). */
  fields: Record<string, unknown> & { answer: string; tables_used: string[] };
  /** The answer as memory keeps it, when it differs from what the caller is shown (the SDK's DISCLAIMER removed). */
  storedAnswer?: string;
  status: TurnStatus;
  sqlQuery: string | null;
  /** How long the answerer took, in milliseconds. */
  latencyMs: number;
}

export interface Answerer {
  readonly kind: 'upstream' | 'sql' | 'none';
  answer(request: AnswerRequest): Promise<Answer>;
  /** Releases what the answerer holds (the sql answerer's pool, the upstream answerer's keep-alive connections). */
  close?(): Promise<void>;
}
