import { randomUUID } from 'node:crypto';
import { recentQuestions } from '../../db/repositories/turns.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { ClientTurnStatus } from '../../model/turns.js';
import { databaseNames } from '../database-names.js';
import type { MemoryDeps } from '../deps.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';
import { eraseEpochAtStart, storeTurn } from '../turns/store-turn.js';
import { type ChainFormat, prepareMessageChain } from './chains.js';
import { sessionIdForWrite } from './session-keys.js';
import { newSessionName } from './session-name.js';
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
  const eraseEpoch = await eraseEpochAtStart(deps.db, identity);
  const target: { sessionId: string } | { newSessionName?: string } =
    'sessionKey' in asked && asked.sessionKey !== undefined
      ? {
          sessionId: (await sessionIdForWrite(
            deps,
            identity,
            { sessionKey: asked.sessionKey },
            { sessionName: asked.newSessionName, question: input.question },
            eraseEpoch,
          )) as string,
        }
      : asked;
  const chain = input.messages ? prepareMessageChain(input.messages, input.messages_format) : undefined;
  const now = deps.clock();
  const warnings: string[] = [];
  const sessionId = 'sessionId' in target ? target.sessionId : randomUUID();
  const sqlQuery = input.sql_query?.trim() || null;
  const tablesUsed = databaseNames(input.tables_used) ?? [];

  const recent =
    'sessionId' in target
      ? await recentQuestions(deps.db.asUser(identity), identity, sessionId, now, deps.settings.maxTurnsPerSession).catch(
          (err: unknown) => {
            throw new AppError('memory-store-unavailable', 'the turn could not be stored; please retry', { cause: err });
          },
        )
      : [];
  const { response } = await storeTurn(
    deps,
    {
      identity,
      sessionId,
      createWithName:
        'sessionId' in target ? undefined : newSessionName(deps, { sessionName: target.newSessionName, question: input.question }),
      now,
      eraseEpoch,
    },
    {
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
        turn: { turn_number: stored.turnNumber, created_at: now.toISOString(), duplicate_of: turn.duplicateOf ?? null },
        warnings,
      }),
    },
  );
  return response;
}
