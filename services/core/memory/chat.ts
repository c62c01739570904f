import { randomUUID } from 'node:crypto';
import { type AppendTurnRequest, appendTurn, type Retrieved, type StoredTurn } from '../../../db/repositories/memory-store.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { SessionRow } from '../../model/sessions.js';
import type { NewTurn } from '../../model/turns.js';
import type { Answer } from '../../providers/answerers/answerer.js';
import type { IdempotencyClaim } from '../idempotency/idempotency.js';
import { sessionView } from '../sessions/session-view.js';
import { storeTurn } from '../sessions/store-turn.js';
import { embeddedTurnText } from '../sessions/turn-text.js';
import { cutText } from '../text.js';
import { buildAugmentedRequest } from './augment.js';
import { buildMemoryContext } from './chat-block.js';
import { databaseNames } from './database-names.js';
import type { MemoryDeps } from './deps.js';
import { recallMemory } from './recall.js';

export interface MemoryChatRequest {
  identity: Identity;
  question: string;
  sessionId?: string;
  sessionName?: string;
  useMemory: boolean;
  maxHistoryTurns?: number;
  semanticSearchK?: number;
  /** answerQuestion parameters, forwarded as given (custom_instructions is merged with memory). */
  params: Record<string, unknown>;
  upstreamAuthorization?: string;
  /** The request's Idempotency-Key claim: completed in the transaction that stores the turn. */
  idempotency?: IdempotencyClaim;
}

const SESSION_NAME_CHARS = 100;

/**
 * One proxied question (docs/design.md §4): resolve memory, ask the answerer with it, store the turn.
 * A failed memory read degrades to an answer without memory plus a warning; a failed write is an
 * error, because a turn must never silently vanish.
 */
export async function runMemoryChat(deps: MemoryDeps, req: MemoryChatRequest) {
  const { settings } = deps;
  const now = deps.clock();
  const warnings: string[] = [];
  const databases = databaseNames(req.params.vdp_database_names);
  const retrievalStarted = performance.now();

  const retrieved = await readMemory(deps, req, now, databases, warnings);
  if (req.sessionId && retrieved && !retrieved.session) {
    throw new AppError('session-not-found', `session ${req.sessionId} does not exist or has expired`);
  }
  const context = buildMemoryContext({
    window: retrieved?.window ?? [],
    similar: retrieved?.similar ?? [],
    summary: retrieved?.summary ?? null,
    maxTokens: settings.maxContextTokens,
  });
  const memoryRetrievalSeconds = (performance.now() - retrievalStarted) / 1000;

  const callerInstructions = typeof req.params.custom_instructions === 'string' ? req.params.custom_instructions : undefined;
  const augmented = await buildAugmentedRequest({
    question: req.question,
    callerInstructions,
    context,
    strategy: settings.augmentation,
    llm: deps.llm,
    maxQuestionChars: settings.maxQuestionChars,
  });
  warnings.push(...augmented.warnings);

  const sessionId = req.sessionId ?? randomUUID();
  const target: TurnTarget = {
    identity: req.identity,
    sessionId,
    createWithName: req.sessionId ? undefined : (req.sessionName ?? cutText(req.question.trim(), SESSION_NAME_CHARS)),
    now,
  };
  const turnBase = {
    question: req.question,
    augmentedQuestion: augmented.question === req.question ? null : augmented.question,
    vdpDatabaseNames: databases ?? [],
  };

  let answer: Answer;
  try {
    answer = await deps.answerer.answer({
      question: augmented.question,
      customInstructions: augmented.customInstructions,
      params: req.params,
      upstreamAuthorization: req.upstreamAuthorization,
    });
  } catch (err) {
    if (err instanceof AppError && err.code.startsWith('upstream-')) {
      await storeFailedTurn(deps, target, turnBase, err);
      err.extra.extensions = { ...err.extra.extensions, conversation_id: sessionId };
    }
    throw err;
  }

  const turn: NewTurn = {
    ...turnBase,
    status: answer.status,
    answer: answer.fields.answer,
    sqlQuery: answer.sqlQuery,
    queryExplanation: typeof answer.fields.query_explanation === 'string' ? answer.fields.query_explanation : null,
    tablesUsed: answer.fields.tables_used,
    executionResult: answer.fields.execution_result ?? null,
    metadata: {},
    ...(await embedTurn(deps, req.question, answer, warnings)),
  };
  const { stored, response } = await store(deps, target, turn, req.idempotency, (session) => ({
    ...answer.fields,
    conversation_metadata: conversationMetadata(session),
    memory_context_used: {
      history_messages_count: context.history.length,
      similar_queries_count: context.similar.length,
      context_tokens: context.tokens,
      context_truncated: context.truncated,
      augmented_question: augmented.question,
      ...(augmented.contextInInstructions ? { custom_instructions: augmented.customInstructions } : {}),
    },
    memory_retrieval_time: round(memoryRetrievalSeconds, 4),
    warnings,
  }));
  await deps.afterTurnStored?.({
    identity: req.identity,
    sessionId,
    turnCount: stored.session.turn_count,
    lastTurnNumber: stored.turnNumber,
    summaryThroughTurn: stored.session.summary_through_turn,
  });
  return response;
}

export type MemoryChatResponse = Awaited<ReturnType<typeof runMemoryChat>>;

async function readMemory(
  deps: MemoryDeps,
  req: MemoryChatRequest,
  now: Date,
  databases: string[] | undefined,
  warnings: string[],
): Promise<Retrieved | undefined> {
  if (!req.useMemory && !req.sessionId) return undefined;
  const { settings } = deps;
  try {
    return await recallMemory(
      deps,
      {
        identity: req.identity,
        question: req.question,
        sessionId: req.sessionId,
        now,
        windowSize: req.useMemory ? Math.min(req.maxHistoryTurns ?? settings.maxHistoryTurns, settings.maxTurnsPerSession) : 0,
        k: req.useMemory ? (req.semanticSearchK ?? settings.semanticSearchK) : 0,
        databases,
      },
      (err) => {
        deps.log.warn({ err }, 'embedding the question failed; answering without semantic search');
        warnings.push('semantic memory search is unavailable: answered with the conversation history only');
      },
    );
  } catch (err) {
    deps.log.warn({ err }, 'reading memory failed; answering without memory');
    warnings.push('memory is unavailable: this question was answered without conversation memory');
    return undefined;
  }
}

async function embedTurn(deps: MemoryDeps, question: string, answer: Answer, warnings: string[]) {
  try {
    const [embedding = null] = await deps.embedder.embed([
      embeddedTurnText({ question, sqlQuery: answer.sqlQuery, tablesUsed: answer.fields.tables_used, answer: answer.fields.answer }),
    ]);
    return { embedding, embeddingModel: deps.embedder.modelId };
  } catch (err) {
    deps.log.warn({ err }, 'embedding the turn failed; storing it without an embedding');
    warnings.push('this turn was stored without an embedding: semantic search will not find it until it is re-embedded');
    return { embedding: null, embeddingModel: deps.embedder.modelId };
  }
}

/** Where a turn goes: the caller's session, created with this name when it is new. */
interface TurnTarget {
  identity: Identity;
  sessionId: string;
  createWithName?: string;
  now: Date;
}

function appendRequest(deps: MemoryDeps, target: TurnTarget, turn: NewTurn): AppendTurnRequest {
  return { ...target, ttlMs: deps.settings.ttlMs, ttlMode: deps.settings.ttlMode, turn };
}

async function store<R>(
  deps: MemoryDeps,
  target: TurnTarget,
  turn: NewTurn,
  claim: IdempotencyClaim | undefined,
  respond: (session: SessionRow) => R,
): Promise<{ stored: StoredTurn; response: R }> {
  const result = await storeTurn(deps.db, appendRequest(deps, target, turn), claim, (stored) => respond(stored.session));
  if (!result) throw new AppError('session-not-found', `session ${target.sessionId} does not exist or has expired`);
  return result;
}

/** Upstream failures are kept, flagged, so the conversation's record is complete; they never steer SQL. */
async function storeFailedTurn(
  deps: MemoryDeps,
  target: TurnTarget,
  turnBase: Pick<NewTurn, 'question' | 'augmentedQuestion' | 'vdpDatabaseNames'>,
  error: AppError,
) {
  try {
    await appendTurn(
      deps.db.asUser(target.identity),
      appendRequest(deps, target, {
        ...turnBase,
        status: 'upstream_error',
        answer: '',
        sqlQuery: null,
        queryExplanation: null,
        tablesUsed: [],
        executionResult: null,
        metadata: { error_code: error.code, error_detail: error.message },
        embedding: null,
        embeddingModel: deps.embedder.modelId,
      }),
    );
  } catch (err) {
    deps.log.warn({ err }, 'recording the failed turn failed');
  }
}

/** The session as /memoryChat reports it (docs/design.md §4 names the id `conversation_id`). */
export function conversationMetadata(session: SessionRow) {
  const { session_id, slots: _slots, ...rest } = sessionView(session);
  return { conversation_id: session_id, ...rest };
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
