import { randomUUID } from 'node:crypto';
import type { Retrieved } from '../../../db/repositories/memory-store.js';
import { recentQuestions } from '../../../db/repositories/turns.js';
import { AppError } from '../../model/errors.js';
import type { SessionRow } from '../../model/sessions.js';
import type { NewTurn } from '../../model/turns.js';
import type { Answer, AnswerRequest } from '../../providers/answerers/answerer.js';
import { recogniseMemoryCommand } from '../commands/recognise.js';
import type { StoredTurnText } from '../privacy/mask-turn.js';
import { embedWithDedup } from '../sessions/near-duplicate.js';
import { sessionIdForWrite } from '../sessions/session-keys.js';
import { storableTurn } from '../sessions/storable-turn.js';
import { eraseEpochAtStart } from '../sessions/store-turn.js';
import { embeddedTurnText } from '../sessions/turn-text.js';
import { recordContent, traced } from '../tracing.js';
import { buildAugmentedRequest } from './augment.js';
import { buildMemoryContext } from './chat-block.js';
import { runMemoryCommand } from './chat-command.js';
import { type ChatStream, ClientGoneError, type MemoryChatRequest } from './chat-request.js';
import { conversationMetadata, csvUrl, respondWithoutStoring, round, store, storeUnfinishedTurn, turnTarget } from './chat-store.js';
import { databaseNames } from './database-names.js';
import type { MemoryDeps } from './deps.js';
import { turnSearchTerms } from './lexical-terms.js';
import { pinnedViews } from './pinned-views.js';
import { recallMemory } from './recall.js';
import { boundedReplyFields, tokenCounts } from './reply-bounds.js';
import { memoryDecision, storesTurns } from './rollout.js';

/**
 * One proxied question (docs/design.md §4): resolve memory, ask the answerer with it, store the turn.
 * A failed memory read degrades to an answer without memory plus a warning; a failed write is an
 * error, because a turn must never silently vanish. A memory command is answered from memory instead.
 */
export async function runMemoryChat(deps: MemoryDeps, asked: MemoryChatRequest, stream?: ChatStream) {
  const started = performance.now();
  // Outside the rollout with MEMORY_STORE_OUTSIDE_ROLLOUT=false the service is a plain proxy: no
  // session is found or made, no command recognised, nothing stored (docs/privacy.md#rollout).
  const storing = storesTurns(deps.settings.rollout, asked.identity);
  // The user's erasure epoch is read by the request's first statement, before anything is written:
  // on its own before a keyed session is found or made, else with the memory read (one round trip).
  const keyedEpoch = storing && asked.sessionKey !== undefined ? await eraseEpochAtStart(deps.db, asked.identity) : undefined;
  const req = {
    ...asked,
    sessionId: storing ? await sessionIdForWrite(deps, asked.identity, asked, asked, keyedEpoch ?? 0) : undefined,
  };
  const command = storing && req.memoryCommands ? recogniseMemoryCommand(req.question) : undefined;
  if (command) {
    const eraseEpoch = keyedEpoch ?? (await eraseEpochAtStart(deps.db, req.identity));
    return runMemoryCommand(deps, { ...req, eraseEpoch }, command, stream);
  }

  const { settings } = deps;
  const now = deps.clock();
  const warnings: string[] = [];
  const databases = databaseNames(req.params.vdp_database_names);
  const retrievalStarted = performance.now();
  const decision = memoryDecision(settings.rollout, req.identity, req.useMemory);

  const retrieved = await traced('memory.retrieval', {}, () =>
    readMemory(deps, { ...req, useMemory: decision.applied }, now, databases, warnings),
  );
  if (req.sessionId && retrieved && !retrieved.session) {
    throw new AppError('session-not-found', `session ${req.sessionId} does not exist or has expired`);
  }
  // Without a memory read (none asked, or it failed) the epoch is read now, still before the answerer is asked.
  const eraseEpoch = storing ? (keyedEpoch ?? retrieved?.eraseEpoch ?? (await eraseEpochAtStart(deps.db, req.identity))) : 0;
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
  const useViews = pinnedViews(context, req.params.use_views, databases);

  const sessionId = storing ? (req.sessionId ?? randomUUID()) : null;
  const target = sessionId ? turnTarget(deps, { ...req, eraseEpoch }, sessionId, now) : undefined;
  // The answerer gets the question as asked; what is stored and embedded is cut and masked: storableTurn (docs/privacy.md).
  const turnBase = {
    question: req.question,
    augmentedQuestion: augmented.question === req.question ? null : augmented.question,
    vdpDatabaseNames: databases ?? [],
    vdpTagNames: databaseNames(req.params.vdp_tag_names) ?? [],
    answerer: settings.answererIdentity,
  };
  const memoryContextUsed = {
    history_messages_count: context.history.length,
    similar_queries_count: context.similar.length,
    history_turns: context.history.map((t) => t.turn_number),
    similar_queries: context.similar.map((t) => ({
      session_id: t.session_id,
      turn_number: t.turn_number,
      question: t.question,
      similarity: round(t.similarity, 4),
    })),
    context_tokens: context.tokens,
    context_truncated: context.truncated,
    augmented_question: augmented.question,
    ...(useViews ? { use_views: useViews } : {}),
    ...(augmented.contextInInstructions ? { custom_instructions: augmented.customInstructions } : {}),
    // Whether memory was used, and why not: answers with and without memory can then be compared.
    applied: decision.applied && retrieved !== undefined,
    reason: decision.applied && retrieved === undefined ? ('memory_unavailable' as const) : decision.reason,
  };
  stream?.memory({
    conversation_id: sessionId,
    memory_context_used: memoryContextUsed,
    memory_retrieval_time: round(memoryRetrievalSeconds, 4),
  });

  const request: AnswerRequest = {
    question: augmented.question,
    identity: req.identity,
    customInstructions: augmented.customInstructions,
    useViews,
    params: req.params,
    upstreamAuthorization: req.upstreamAuthorization,
    memory: context,
    ...(stream ? { signal: stream.signal } : {}),
    ...(req.clientGone ? { clientGone: req.clientGone } : {}),
  };
  const streamed: string[] = [];
  let answer: Answer;
  try {
    const onText = stream
      ? (text: string) => {
          streamed.push(text);
          stream.text(text);
        }
      : undefined;
    answer = await traced('answerer.answer', { 'memorychat.answerer': deps.answerer.kind }, async (span) => {
      const answered = await ask(deps, request, onText);
      if (span) recordContent(span, { 'memorychat.question': request.question, 'memorychat.sql_query': answered.sqlQuery });
      return answered;
    });
  } catch (err) {
    if (stream?.signal.aborted) {
      if (target) {
        await storeUnfinishedTurn(deps, target, { ...turnBase, status: 'incomplete', answer: streamed.join('') }, { incomplete: true });
      }
      throw new ClientGoneError('the client went away before the answer was complete');
    }
    if (target && err instanceof AppError && err.code.startsWith('upstream-')) {
      await storeUnfinishedTurn(
        deps,
        target,
        { ...turnBase, status: 'upstream_error', answer: '' },
        {
          error_code: err.code,
          error_detail: err.message,
        },
      );
      err.extra.extensions = { ...err.extra.extensions, conversation_id: sessionId };
    }
    throw err;
  }

  // The reply, the same whether the turn is stored (with its session) or not (null), of a size that serialises.
  const fields = boundedReplyFields(answer.fields, settings, warnings);
  const reply = (session: SessionRow | null, duplicateOf: number | null, csv: { csv_url?: string } = {}) => ({
    ...fields,
    ...csv,
    conversation_metadata: session && conversationMetadata(session),
    memory_context_used: memoryContextUsed,
    memory_retrieval_time: round(memoryRetrievalSeconds, 4),
    duplicate_of: duplicateOf,
    warnings,
  });
  if (!target) return respondWithoutStoring(deps, req.idempotency, reply(null, null));

  const text = storableTurn(
    deps,
    {
      ...turnBase,
      status: answer.status,
      answer: answer.storedAnswer ?? fields.answer,
      sqlQuery: answer.sqlQuery,
      queryExplanation: typeof fields.query_explanation === 'string' ? fields.query_explanation : null,
      tablesUsed: fields.tables_used,
      executionResult: fields.execution_result ?? null,
      metadata: stream ? { streamed: true } : {},
    },
    warnings,
  );
  const { embedding, duplicateOf } = await embedTurn(deps, req, retrieved, text, now, warnings);
  const turn: NewTurn = {
    ...text,
    searchTerms: turnSearchTerms(text),
    embedding,
    embeddingModel: deps.embedder.modelId,
    duplicateOf,
    accounting: {
      tokens: tokenCounts(fields.tokens),
      memoryRetrievalMs: round(memoryRetrievalSeconds * 1000, 3),
      answererMs: round(answer.latencyMs, 3),
      totalMs: round(performance.now() - started, 3),
    },
  };
  const { stored, response } = await traced('memory.store', {}, () =>
    store(deps, target, turn, req.idempotency, (stored) => reply(stored.session, duplicateOf, csvUrl(stored, turn.executionResult))),
  );
  try {
    await deps.afterTurnStored?.({
      identity: req.identity,
      sessionId: target.sessionId,
      turnCount: stored.session.turn_count,
      lastTurnNumber: stored.turnNumber,
      summaryThroughTurn: stored.session.summary_through_turn,
    });
  } catch (err) {
    // The turn is stored and its reply made: nothing after that may turn it into a 5xx (a retry would store it again).
    deps.log.warn({ err }, 'queueing summarization failed');
  }
  return response;
}

export type MemoryChatResponse = Awaited<ReturnType<typeof runMemoryChat>>;

/**
 * The answerer's reply; a streamed reply gets its answer as one chunk once the answerer has the whole
 * turn (SQL, tables, tokens), which the stored turn needs (docs/denodo-ai-sdk.md#streaming).
 */
async function ask(deps: MemoryDeps, request: AnswerRequest, onText?: (text: string) => void): Promise<Answer> {
  const answer = await deps.answerer.answer(request);
  onText?.(answer.fields.answer);
  return answer;
}

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
        tags: databaseNames(req.params.vdp_tag_names),
        memoryScope: req.memoryScope,
        answerer: settings.answererIdentity,
        // Read now for the turn's dedup, in the same round trip: one statement fewer per follow-up.
        recentQuestions: settings.maxTurnsPerSession,
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

/**
 * The turn's embedding and the recent turn of its session whose question it nearly repeats
 * (embedWithDedup), among the recent questions read with memory, or read now when memory could not be.
 * Neither failing stops the turn: recent questions that cannot be read leave it unmarked.
 */
async function embedTurn(
  deps: MemoryDeps,
  req: MemoryChatRequest,
  retrieved: Retrieved | undefined,
  turn: StoredTurnText,
  now: Date,
  warnings: string[],
) {
  const recent = retrieved
    ? retrieved.recent
    : req.sessionId
      ? await recentQuestions(deps.db.asUser(req.identity), req.identity, req.sessionId, now, deps.settings.maxTurnsPerSession).catch(
          (err: unknown) => {
            deps.log.warn({ err }, 'reading recent questions for dedup failed; storing the turn unmarked');
            return [];
          },
        )
      : [];
  return embedWithDedup(deps, { text: embeddedTurnText(turn), question: turn.question }, recent, { warnings, subject: 'this turn' });
}
