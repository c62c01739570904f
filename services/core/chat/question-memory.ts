import { recentQuestions } from '../../db/repositories/turns.js';
import { AppError } from '../../model/errors.js';
import type { RecentQuestion } from '../../model/turns.js';
import { ANSWER_CHARS_IN_CONTEXT, type BuiltContext, buildMemoryContext } from '../context/chat-block.js';
import { type Recalled, recallMemory } from '../context/recall-memory.js';
import { databaseNames } from '../database-names.js';
import type { MemoryDeps } from '../deps.js';
import { pairsUsed } from '../pairs/pair-recall.js';
import { round } from '../rounding.js';
import { traced } from '../tracing.js';
import type { TurnScope } from '../turns/turn-scope.js';
import { keepReadable, viewCallerOf, viewGateFor, viewPermissionsOutcome } from '../views/readable-memory.js';
import { type Augmented, buildAugmentedRequest } from './augment.js';
import type { MemoryChatRequest } from './chat-request.js';
import { pinnedViews } from './pinned-views.js';
import { type MemoryReason, memoryDecision } from './rollout.js';

/** The memory a /memoryChat question is asked with, and what the reply says of it. */
export interface QuestionMemory {
  retrieved: Recalled | undefined;
  context: BuiltContext;
  augmented: Augmented;
  databases: string[] | undefined;
  useViews: string[] | undefined;
  /**
   * The session's recent questions that the turn may nearly repeat: read with memory, or on their
   * own when memory could not be read. Questions that cannot be read leave the turn unmarked.
   */
  recent: RecentQuestion[];
  /** How long reading memory took: in seconds to 4 places (the reply's `memory_retrieval_time`), in milliseconds to 3 (the turn's accounting). */
  retrievalTime: { seconds: number; ms: number };
  /** `memory_context_used` of the reply. */
  used: ReturnType<typeof memoryContextUsed>;
}

/**
 * Reads the scope's session window and the user's similar turns, packs them within the token budget
 * and builds the augmented request (docs/design.md §4). A failed read degrades to no memory plus a
 * warning; a session that is not the caller's live session is a 404.
 */
export async function memoryForQuestion(
  deps: MemoryDeps,
  scope: TurnScope,
  req: MemoryChatRequest,
  warnings: string[],
): Promise<QuestionMemory> {
  const { settings } = deps;
  const databases = databaseNames(req.params.vdp_database_names);
  const retrievalStarted = performance.now();
  const decision = memoryDecision(settings.rollout, req.identity, req.useMemory);

  const read = await traced('memory.retrieval', {}, () =>
    readMemory(deps, scope, { ...req, useMemory: decision.applied }, databases, warnings),
  );
  if (scope.sessionId && read && !read.session) {
    throw new AppError('session-not-found', `session ${scope.sessionId} does not exist or has expired`);
  }
  const { retrieved, readableViews } = await readableMemory(deps, req, read);
  const recent =
    retrieved || !scope.sessionId
      ? (retrieved?.recent ?? [])
      : await recentQuestions(
          deps.db.asUser(scope.identity),
          scope.identity,
          scope.sessionId,
          scope.now,
          settings.maxTurnsPerSession,
        ).catch((err: unknown) => {
          deps.log.warn({ err }, 'reading recent questions for dedup failed; storing the turn unmarked');
          return [];
        });
  const context = buildMemoryContext({
    window: retrieved?.window ?? [],
    similar: retrieved?.similar ?? [],
    summary: retrieved?.summary ?? null,
    pairs: retrieved?.pairs ?? [],
    maxTokens: settings.maxContextTokens,
  });
  const retrievalSeconds = (performance.now() - retrievalStarted) / 1000;
  const retrievalTime = { seconds: round(retrievalSeconds, 4), ms: round(retrievalSeconds * 1000, 3) };

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
  const used = {
    ...memoryContextUsed(context, augmented, useViews, {
      applied: decision.applied && retrieved !== undefined,
      reason: decision.applied && retrieved === undefined ? ('memory_unavailable' as const) : decision.reason,
    }),
    ...readableViews,
  };
  return { retrieved, context, augmented, databases, useViews, recent, retrievalTime, used };
}

/** The read memory less the turns and verified pairs over a view the caller may not read now, and what the reply says of it. */
async function readableMemory(deps: MemoryDeps, req: MemoryChatRequest, read: Recalled | undefined) {
  if (!read) return { retrieved: read, readableViews: {} };
  const items = [...read.window, ...read.similar, ...read.pairs];
  const gate = await viewGateFor(deps.viewPermissions, viewCallerOf(req.identity, req.upstreamAuthorization), items);
  const window = keepReadable(read.window, gate);
  const similar = keepReadable(read.similar, gate);
  const pairs = keepReadable(read.pairs, gate);
  return {
    retrieved: { ...read, window: window.kept, similar: similar.kept, pairs: pairs.kept },
    readableViews: viewPermissionsOutcome(gate, window.leftOut + similar.leftOut + pairs.leftOut),
  };
}

async function readMemory(
  deps: MemoryDeps,
  scope: TurnScope,
  req: MemoryChatRequest,
  databases: string[] | undefined,
  warnings: string[],
): Promise<Recalled | undefined> {
  if (!req.useMemory && !scope.sessionId) return undefined;
  const { settings } = deps;
  try {
    return await recallMemory(
      deps,
      {
        identity: scope.identity,
        question: req.question,
        sessionId: scope.sessionId,
        now: scope.now,
        windowSize: req.useMemory ? Math.min(req.maxHistoryTurns ?? settings.maxHistoryTurns, settings.maxTurnsPerSession) : 0,
        k: req.useMemory ? (req.semanticSearchK ?? settings.semanticSearchK) : 0,
        databases,
        tags: databaseNames(req.params.vdp_tag_names),
        memoryScope: req.memoryScope,
        answerer: settings.answererIdentity,
        // Read now for the turn's dedup, in the same round trip: one statement fewer per follow-up.
        recentQuestions: settings.maxTurnsPerSession,
        verifiedPairs: req.useMemory,
        // One more than the block renders, so cutText still sees a longer answer as cut.
        answerChars: ANSWER_CHARS_IN_CONTEXT + 1,
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

function memoryContextUsed(
  context: BuiltContext,
  augmented: Augmented,
  useViews: string[] | undefined,
  outcome: { applied: boolean; reason: MemoryReason },
) {
  return {
    history_messages_count: context.history.length,
    similar_queries_count: context.similar.length,
    history_turns: context.history.map((t) => t.turn_number),
    similar_queries: context.similar.map((t) => ({
      session_id: t.session_id,
      turn_number: t.turn_number,
      question: t.question,
      similarity: round(t.similarity, 4),
    })),
    ...pairsUsed(context.pairs),
    context_tokens: context.tokens,
    context_truncated: context.truncated,
    augmented_question: augmented.question,
    ...(useViews ? { use_views: useViews.join(', ') } : {}),
    ...(augmented.contextInInstructions ? { custom_instructions: augmented.customInstructions } : {}),
    // Whether memory was used, and why not: answers with and without memory can then be compared.
    ...outcome,
  };
}
