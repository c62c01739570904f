import { randomUUID } from 'node:crypto';
import { AppError } from '../../model/errors.js';
import { answerMemoryCommand } from '../commands/answer-command.js';
import type { MemoryCommand } from '../commands/recognise.js';
import type { MemoryDeps } from '../deps.js';
import { round } from '../rounding.js';
import { conversationMetadata } from '../sessions/session-view.js';
import { storeTurn } from '../turns/store-turn.js';
import type { ChatStream, MemoryChatRequest } from './chat-request.js';
import { turnTarget } from './turn-target.js';

/**
 * A memory command, answered from memory and stored as a `memory_command` turn (never history for
 * later SQL). The reply has the usual shape, with no memory used and `memory_command` added.
 */
export async function runMemoryCommand(
  deps: MemoryDeps,
  req: MemoryChatRequest & { eraseEpoch: number },
  command: MemoryCommand,
  stream?: ChatStream,
) {
  const now = deps.clock();
  const sessionId = req.sessionId ?? randomUUID();
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
    conversation_id: sessionId,
    memory_context_used: memoryContextUsed,
    memory_retrieval_time: 0,
    memory_command: command.name,
  });
  const started = performance.now();
  const outcome = await answerMemoryCommand(deps, req.identity, req.sessionId, command).catch((err: unknown) => {
    throw new AppError('memory-store-unavailable', 'the memory command could not be answered; please retry', { cause: err });
  });
  const retrievalSeconds = (performance.now() - started) / 1000;
  stream?.text(outcome.answer);
  // A scope command that starts a conversation makes its session with that scope.
  const creating = command.name === 'memory_scope' ? { ...req, memoryScope: command.scope } : req;
  const { response } = await storeTurn(deps, turnTarget(deps, creating, sessionId, now), {
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
