import type { TurnStatus } from '../../model/turns.js';

export interface AnswerRequest {
  question: string;
  customInstructions?: string;
  /** answerQuestion parameters from the caller, forwarded as given. */
  params: Record<string, unknown>;
  /** The caller's `X-Upstream-Authorization` header, for ANSWER_AUTH=forward. */
  upstreamAuthorization?: string;
}

export interface Answer {
  /** The answerer's reply fields, normalised (tables_used always an array). */
  fields: Record<string, unknown> & { answer: string; tables_used: string[] };
  status: TurnStatus;
  sqlQuery: string | null;
  /** How long the answerer took, in milliseconds. */
  latencyMs: number;
}

export interface Answerer {
  readonly kind: 'upstream' | 'none';
  answer(request: AnswerRequest): Promise<Answer>;
}
