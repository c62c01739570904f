import { randomUUID } from 'node:crypto';
import { recentQuestions } from '../../../db/repositories/turns.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { TurnStatus } from '../../model/turns.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';
import { databaseNames } from '../memory/database-names.js';
import type { MemoryDeps } from '../memory/deps.js';
import { cutText } from '../text.js';
import { type ChainFormat, prepareMessageChain } from './chains.js';
import { sessionView } from './session-view.js';
import { notFound } from './sessions.js';
import { storeTurn } from './store-turn.js';
import { embeddedTurnText } from './turn-text.js';

export interface TurnInput {
  question: string;
  answer: string;
  sql_query?: string | null;
  query_explanation?: string | null;
  tables_used?: string[] | string;
  vdp_database_names?: string[] | string;
  execution_result?: unknown;
  status?: Exclude<TurnStatus, 'upstream_error'>;
  messages?: unknown[];
  messages_format?: ChainFormat;
  context?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

const SESSION_NAME_CHARS = 100;

/**
 * Stores a finished turn sent by a chatbot that runs its own LLM (docs/design.md §2 memory API mode): the
 * chain is validated and stripped of binary content, the turn is embedded, and a question that
 * nearly repeats a recent one of the session is stored marked as its duplicate.
 */
export async function recordTurn(
  deps: MemoryDeps,
  identity: Identity,
  target: { sessionId: string } | { newSessionName?: string },
  input: TurnInput,
  claim?: IdempotencyClaim,
) {
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
  // One embedding call: the turn's text for search, then the question and recent questions for dedup.
  let vectors: (number[] | null)[] = [];
  try {
    vectors = await deps.embedder.embed([
      embeddedTurnText({ question: input.question, sqlQuery, tablesUsed, answer: input.answer }),
      ...(recent.length ? [input.question, ...recent.map((r) => r.question)] : []),
    ]);
  } catch (err) {
    deps.log.warn({ err }, 'embedding the turn failed; storing it without an embedding');
    warnings.push('this turn was stored without an embedding: search will not find it until it is re-embedded');
  }
  const duplicateOf = nearDuplicate(vectors.slice(1), recent, deps.settings.dedupSimilarity);

  const result = await storeTurn(
    deps.db,
    {
      identity,
      sessionId,
      createWithName: 'sessionId' in target ? undefined : (target.newSessionName ?? cutText(input.question.trim(), SESSION_NAME_CHARS)),
      now,
      ttlMs: deps.settings.ttlMs,
      ttlMode: deps.settings.ttlMode,
      turn: {
        status: input.status ?? (sqlQuery ? 'ok' : 'clarification'),
        question: input.question,
        augmentedQuestion: null,
        answer: input.answer,
        sqlQuery,
        queryExplanation: input.query_explanation ?? null,
        tablesUsed,
        vdpDatabaseNames: databaseNames(input.vdp_database_names) ?? [],
        executionResult: input.execution_result ?? null,
        metadata: input.metadata ?? {},
        embedding: vectors[0] ?? null,
        embeddingModel: deps.embedder.modelId,
        messages: chain ?? null,
        context: input.context ?? null,
        duplicateOf,
      },
    },
    claim,
    (stored) => ({
      session: sessionView(stored.session),
      turn: { turn_number: stored.turnNumber, created_at: now.toISOString(), duplicate_of: duplicateOf },
      warnings,
    }),
  );
  if (!result) throw notFound(sessionId);
  const { stored, response } = result;
  try {
    await deps.afterTurnStored?.({
      identity,
      sessionId,
      turnCount: stored.session.turn_count,
      lastTurnNumber: stored.turnNumber,
      summaryThroughTurn: stored.session.summary_through_turn,
    });
  } catch (err) {
    // The turn is stored; a summary that is not queued now is queued by the next turn.
    deps.log.warn({ err }, 'queueing summarization failed');
  }
  return response;
}

/** The original (never another duplicate) of the most similar recent question at or above the threshold. */
function nearDuplicate(
  vectors: (number[] | null)[],
  recent: { turn_number: number; duplicate_of: number | null }[],
  threshold: number,
): number | null {
  const [question, ...others] = vectors;
  if (!question) return null;
  let best: { similarity: number; turn: (typeof recent)[number] } | undefined;
  others.forEach((vector, i) => {
    const turn = recent[i];
    if (!vector || !turn) return;
    const similarity = vector.reduce((sum, v, j) => sum + v * (question[j] ?? 0), 0);
    if (similarity >= threshold && (!best || similarity > best.similarity)) best = { similarity, turn };
  });
  return best ? (best.turn.duplicate_of ?? best.turn.turn_number) : null;
}
