import { AppError } from '../../model/errors.js';
import type { SessionRow } from '../../model/sessions.js';
import type { Answer, AnswerRequest } from '../../providers/answerers/answerer.js';
import { recogniseMemoryCommand } from '../commands/recognise.js';
import { databaseNames } from '../database-names.js';
import type { MemoryDeps } from '../deps.js';
import { respondWithoutStoring } from '../idempotency/idempotency.js';
import { pairsMetadata } from '../pairs/pair-recall.js';
import { round } from '../rounding.js';
import { conversationMetadata } from '../sessions/session-view.js';
import { csvUrl } from '../sessions/turn-view.js';
import { storableTokenCounts } from '../stored-bounds.js';
import { recordContent, traced } from '../tracing.js';
import { type QuestionTurnBase, storeTurn, storeUnfinishedTurn } from '../turns/store-turn.js';
import { resolveTurnScope, type TurnTarget, turnTarget } from '../turns/turn-scope.js';
import { runMemoryCommand } from './chat-command.js';
import { type ChatStream, ClientGoneError, type MemoryChatRequest } from './chat-request.js';
import { memoryForQuestion, type QuestionMemory } from './question-memory.js';
import { boundedReplyFields } from './reply-bounds.js';
import { storesTurns } from './rollout.js';

/**
 * One proxied question (docs/design.md §4): resolve memory, ask the answerer with it, store the turn.
 * A failed memory read degrades to an answer without memory plus a warning; a failed write is an
 * error, because a turn must never silently vanish. A memory command is answered from memory instead.
 */
export async function runMemoryChat(deps: MemoryDeps, asked: MemoryChatRequest, stream?: ChatStream) {
  const started = performance.now();
  // Outside the rollout with MEMORY_STORE_OUTSIDE_ROLLOUT=false the service is a plain proxy: no
  // session is found or made, no command recognised, nothing stored (docs/privacy.md#rollout).
  const stores = storesTurns(deps.settings.rollout, asked.identity);
  const command = stores && asked.memoryCommands ? recogniseMemoryCommand(asked.question) : undefined;
  // A scope command that starts a conversation makes its session with that scope. A command reads
  // no memory, so the epoch is read on its own; a question's memory read brings it.
  const scope = await resolveTurnScope(deps, command?.name === 'memory_scope' ? { ...asked, memoryScope: command.scope } : asked, {
    stores,
    epochWithMemoryRead: !command,
  });
  if (command) return runMemoryCommand(deps, scope, await turnTarget(deps.db, scope), asked, command, stream);

  const warnings: string[] = [];
  const memory = await memoryForQuestion(deps, scope, asked, warnings);
  const target = scope.stores ? await turnTarget(deps.db, scope, memory.retrieved) : undefined;
  stream?.memory({
    conversation_id: target?.sessionId ?? null,
    memory_context_used: memory.used,
    memory_retrieval_time: memory.retrievalTime.seconds,
  });
  // What every turn of this question stores, whatever the answerer did.
  const base = {
    question: asked.question,
    augmentedQuestion: memory.augmented.question === asked.question ? null : memory.augmented.question,
    vdpDatabaseNames: memory.databases ?? [],
    vdpTagNames: databaseNames(asked.params.vdp_tag_names) ?? [],
    answerer: deps.settings.answererIdentity,
  };

  const answer = await askAnswerer(deps, asked, memory, stream, target && { target, base });
  // The reply, the same whether the turn is stored (with its session) or not (null), of a size that serialises.
  const fields = boundedReplyFields(answer.fields, deps.settings, warnings);
  const tokens = storableTokenCounts(fields.tokens);
  const reply = (session: SessionRow | null, duplicateOf: number | null, csv: { csv_url?: string } = {}) => ({
    ...fields,
    ...csv,
    // A chat frontend shows the answer as a question to reply to.
    ...(answer.asksClarification ? { asks_clarification: true } : {}),
    conversation_metadata: session && conversationMetadata(session),
    memory_context_used: memory.used,
    memory_retrieval_time: memory.retrievalTime.seconds,
    duplicate_of: duplicateOf,
    warnings,
  });
  if (!target) return respondWithoutStoring(deps, asked.idempotency, reply(null, null));

  const { response } = await storeTurn(deps, target, {
    // The answerer got the question as asked; what is stored and embedded is cut and masked (docs/privacy.md).
    turn: {
      ...base,
      status: answer.status,
      answer: answer.storedAnswer ?? fields.answer,
      sqlQuery: answer.sqlQuery,
      queryExplanation: typeof fields.query_explanation === 'string' ? fields.query_explanation : null,
      tablesUsed: fields.tables_used,
      executionResult: fields.execution_result ?? null,
      metadata: {
        ...(stream ? { streamed: true } : {}),
        ...(answer.asksClarification ? { asks_clarification: true } : {}),
        // The SDK's word (1.4) that the answer comes from rows Denodo masked: shown with the stored turn.
        ...(typeof fields.is_masked === 'boolean' ? { is_masked: fields.is_masked } : {}),
        ...pairsMetadata(memory.context.pairs),
      },
    },
    dedupAgainst: memory.recent,
    ...(memory.retrieved?.questionEmbedding ? { asked: { question: asked.question, embedding: memory.retrieved.questionEmbedding } } : {}),
    accounting: () => ({
      tokens,
      memoryRetrievalMs: memory.retrievalTime.ms,
      answererMs: round(answer.latencyMs, 3),
      totalMs: round(performance.now() - started, 3),
    }),
    claim: asked.idempotency,
    warnings,
    respond: (stored, turn) => reply(stored.session, turn.duplicateOf ?? null, csvUrl(stored, turn.executionResult)),
  });
  return response;
}

export type MemoryChatResponse = Awaited<ReturnType<typeof runMemoryChat>>;

/**
 * Asks the answerer with the question's memory. A stream whose client went away, and an upstream
 * failure, leave their turn stored as unfinished (never history for later SQL) before the error goes
 * on; the reply's answer reaches a stream as one chunk once the answerer has the whole turn (SQL,
 * tables, tokens), which the stored turn needs (docs/denodo-ai-sdk.md#streaming).
 */
async function askAnswerer(
  deps: MemoryDeps,
  req: MemoryChatRequest,
  memory: QuestionMemory,
  stream: ChatStream | undefined,
  unfinished: { target: TurnTarget; base: QuestionTurnBase } | undefined,
): Promise<Answer> {
  const request: AnswerRequest = {
    question: memory.augmented.question,
    identity: req.identity,
    customInstructions: memory.augmented.customInstructions,
    useViews: memory.useViews,
    params: req.params,
    upstreamAuthorization: req.upstreamAuthorization,
    ...(req.requestId ? { requestId: req.requestId } : {}),
    memory: memory.context,
    ...(stream ? { signal: stream.signal } : {}),
    ...(req.clientGone ? { clientGone: req.clientGone } : {}),
  };
  // What a stream was sent: kept with the turn when its client went away while it was written.
  let streamed = '';
  try {
    return await traced('answerer.answer', { 'memorychat.answerer': deps.answerer.kind }, async (span) => {
      const answered = await deps.answerer.answer(request);
      if (stream) {
        streamed = answered.fields.answer;
        stream.text(streamed);
      }
      if (span) recordContent(span, { 'memorychat.question': request.question, 'memorychat.sql_query': answered.sqlQuery });
      return answered;
    });
  } catch (err) {
    const gone = stream?.signal.aborted === true;
    const upstream = err instanceof AppError && err.code.startsWith('upstream-') ? err : undefined;
    if (unfinished && (gone || upstream)) {
      await storeUnfinishedTurn(
        deps,
        unfinished.target,
        unfinished.base,
        gone
          ? { status: 'incomplete', answer: streamed, metadata: { incomplete: true } }
          : { status: 'upstream_error', answer: '', metadata: { error_code: upstream?.code, error_detail: upstream?.message } },
      );
    }
    if (gone) throw new ClientGoneError('the client went away before the answer was complete');
    if (unfinished && upstream) upstream.extra.extensions = { ...upstream.extra.extensions, conversation_id: unfinished.target.sessionId };
    throw err;
  }
}
