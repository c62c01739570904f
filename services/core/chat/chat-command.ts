import { AppError } from '../../model/errors.js';
import { answerMemoryCommand } from '../commands/answer-command.js';
import type { MemoryCommand } from '../commands/recognise.js';
import type { MemoryDeps } from '../deps.js';
import { round } from '../rounding.js';
import { conversationMetadata } from '../sessions/session-view.js';
import { storeTurn } from '../turns/store-turn.js';
import type { TurnScope, TurnTarget } from '../turns/turn-scope.js';
import type { ChatStream, MemoryChatRequest } from './chat-request.js';

/**
 * A memory command, answered from memory and stored as a `memory_command` turn (never history for
 * later SQL). The reply has the usual shape, with no memory used and `memory_command` added.
 */
export async function runMemoryCommand(
  deps: MemoryDeps,
  scope: TurnScope,
  target: TurnTarget,
  req: MemoryChatRequest,
  command: MemoryCommand,
  stream?: ChatStream,
) {
  const memoryContextUsed = {
    history_messages_count: 0,
    similar_queries_count: 0,
    context_tokens: 0,
    context_truncated: false,
    augmented_question: req.question,
    applied: false,
    reason: 'memory_command' as const,
  };
  stream?.memory({
    conversation_id: target.sessionId,
    memory_context_used: memoryContextUsed,
    memory_retrieval_time: 0,
    memory_command: command.name,
  });
  const started = performance.now();
  const outcome = await answerMemoryCommand(deps, scope, command).catch((err: unknown) => {
    throw new AppError('memory-store-unavailable', 'the memory command could not be answered; please retry', { cause: err });
  });
  const retrievalSeconds = (performance.now() - started) / 1000;
  stream?.text(outcome.answer);
  const { response } = await storeTurn(deps, target, {
    turn: {
      status: 'memory_command',
      question: req.question,
      augmentedQuestion: null,
      answer: outcome.answer,
      sqlQuery: null,
      queryExplanation: null,
      tablesUsed: [],
      vdpDatabaseNames: [],
      executionResult: null,
      metadata: { memory_command: outcome.details },
    },
    warnings: [],
    accounting: () => ({
      tokens: null,
      memoryRetrievalMs: round(retrievalSeconds * 1000, 3),
      answererMs: null,
      totalMs: round(retrievalSeconds * 1000, 3),
    }),
    claim: req.idempotency,
    respond: ({ session }) => ({
      answer: outcome.answer,
      sql_query: outcome.sqlQuery,
      tables_used: outcome.tablesUsed,
      conversation_metadata: conversationMetadata(session),
      memory_context_used: memoryContextUsed,
      memory_retrieval_time: round(retrievalSeconds, 4),
      ...(typeof outcome.details.csv_url === 'string' ? { csv_url: outcome.details.csv_url } : {}),
      memory_command: outcome.details,
      warnings: [] as string[],
    }),
  });
  return response;
}
