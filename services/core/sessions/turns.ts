import { recentQuestions } from '../../db/repositories/turns.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { ClientTurnStatus } from '../../model/turns.js';
import { databaseNames } from '../database-names.js';
import type { MemoryDeps } from '../deps.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';
import { storeTurn } from '../turns/store-turn.js';
import { resolveTurnScope, turnTarget } from '../turns/turn-scope.js';
import { type ChainFormat, prepareMessageChain } from './chains.js';
import { sessionView } from './session-view.js';

export interface TurnInput {
  question: string;
  answer: string;
  sql_query?: string | null;
  query_explanation?: string | null;
  tables_used?: string[] | string;
  vdp_database_names?: string[] | string;
  vdp_tag_names?: string[] | string;
  execution_result?: unknown;
  status?: ClientTurnStatus;
  messages?: unknown[];
  messages_format?: ChainFormat;
  context?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

/**
 * Stores a finished turn sent by a chatbot that runs its own LLM (docs/design.md §2 memory API mode): the
 * chain is validated and stripped of binary content, and the turn goes through the one writer
 * (turns/store-turn.ts), which embeds it and marks it as the duplicate of a recent question it repeats.
 */
export async function storeClientTurn(
  deps: MemoryDeps,
  identity: Identity,
  asked: { sessionId: string } | { newSessionName?: string; sessionKey?: string },
  input: TurnInput,
  claim?: IdempotencyClaim,
) {
  // The epoch is read first, before a key finds or makes the session and before the turn is written.
  const scope = await resolveTurnScope(
    deps,
    {
      identity,
      question: input.question,
      ...('sessionId' in asked ? { sessionId: asked.sessionId } : { sessionKey: asked.sessionKey, sessionName: asked.newSessionName }),
    },
    { stores: true, epochWithMemoryRead: false },
  );
  const chain = input.messages ? prepareMessageChain(input.messages, input.messages_format) : undefined;
  const warnings: string[] = [];
  const sqlQuery = input.sql_query?.trim() || null;
  const tablesUsed = databaseNames(input.tables_used) ?? [];

  const recent = scope.sessionId
    ? await recentQuestions(deps.db.asUser(identity), identity, scope.sessionId, scope.now, deps.settings.maxTurnsPerSession).catch(
        (err: unknown) => {
          throw new AppError('memory-store-unavailable', 'the turn could not be stored; please retry', { cause: err });
        },
      )
    : [];
  const { response } = await storeTurn(deps, await turnTarget(deps.db, scope), {
    turn: {
      status: input.status ?? (sqlQuery ? 'ok' : 'clarification'),
      question: input.question,
      augmentedQuestion: null,
      answer: input.answer,
      sqlQuery,
      queryExplanation: input.query_explanation ?? null,
      tablesUsed,
      vdpDatabaseNames: databaseNames(input.vdp_database_names) ?? [],
      vdpTagNames: databaseNames(input.vdp_tag_names) ?? [],
      executionResult: input.execution_result ?? null,
      metadata: input.metadata ?? {},
      messages: chain ?? null,
      context: input.context ?? null,
    },
    dedupAgainst: recent,
    warnings,
    claim,
    respond: (stored, turn) => ({
      session: sessionView(stored.session),
      turn: { turn_number: stored.turnNumber, created_at: scope.now.toISOString(), duplicate_of: turn.duplicateOf ?? null },
      warnings,
    }),
  });
  return response;
}
