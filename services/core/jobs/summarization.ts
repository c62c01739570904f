import type { Config } from '../../config/config.js';
import { loadSummaryState, loadTurnsToSummarize, type SessionKey, saveSummary } from '../../db/repositories/summaries.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import type { Identity } from '../../model/identity.js';
import type { ChatLlm } from '../../providers/llm/chat-llm.js';
import type { JobLogger, JobQueue } from '../job-queue.js';
import { countTokens } from '../text.js';
import { chunkTurns, foldExtractively, foldWithLlm, llmUserPrompt, SUMMARY_SYSTEM_PROMPT } from './summary-fold.js';

export interface SummarizationSettings {
  /** MEMORY_SUMMARIZATION_THRESHOLD; 0 turns summarization off. */
  threshold: number;
  /** The recent turns left out of the summary, because the context window shows them verbatim. */
  keepRecentTurns: number;
  maxInputTokens: number;
  maxOutputTokens: number;
}

/** Turns read per query while folding: bounds memory for a session that was never summarized. */
const PAGE_TURNS = 200;

/**
 * How many of the newest turns stay out of the summary. The window (MEMORY_MAX_HISTORY_MESSAGES)
 * shows them verbatim, SQL included, which a follow-up needs exactly; the summary covers what is
 * older. At least one turn is summarized per threshold, however large the window.
 */
export function turnsKeptVerbatim(settings: SummarizationSettings): number {
  return Math.max(0, Math.min(settings.keepRecentTurns, settings.threshold - 1));
}

/**
 * A session is due when it has at least `threshold` live turns and `threshold` turns were added since
 * the summary last moved: so a job folds `threshold - kept` turns at a time, not one per new turn.
 */
export function summarizationDue(
  session: { turnCount: number; lastTurnNumber: number; summaryThroughTurn: number | null },
  settings: SummarizationSettings,
): boolean {
  if (settings.threshold <= 0) return false;
  return session.turnCount >= settings.threshold && session.lastTurnNumber - (session.summaryThroughTurn ?? 0) >= settings.threshold;
}

/** The hook /memoryChat (and the turns API) call after storing a turn. Never throws: a missed summary is retried on the next turn. */
export async function enqueueSummarizationIfDue(
  queue: JobQueue,
  settings: SummarizationSettings,
  log: JobLogger,
  event: { identity: Identity; sessionId: string; turnCount: number; lastTurnNumber: number; summaryThroughTurn: number | null },
): Promise<boolean> {
  if (!summarizationDue(event, settings)) return false;
  try {
    await queue.enqueue('summarize', { tenantId: event.identity.tenantId, userId: event.identity.userId, sessionId: event.sessionId });
    return true;
  } catch (err) {
    log.warn({ err }, 'enqueueing summarization failed; it is retried after the next turn');
    return false;
  }
}

export interface SummarizeDeps {
  db: ScopedDatabase;
  /** Undefined: the extractive summary, no LLM. */
  llm?: ChatLlm;
  clock: () => Date;
  log: JobLogger;
  settings: SummarizationSettings;
}

export interface SummarizeResult {
  outcome: 'summarized' | 'up-to-date' | 'session-gone' | 'superseded';
  throughTurn: number | null;
  llmCalls: number;
}

/**
 * Folds the turns the summary does not cover yet into it, chunk by chunk (previous summary + new
 * turns → new summary), saving after each chunk so a retry after a failed LLM call resumes where it
 * stopped. Turns that must not steer SQL or have no content are skipped but counted as covered.
 */
export async function summarizeSession(deps: SummarizeDeps, key: SessionKey): Promise<SummarizeResult> {
  const state = await loadSummaryState(deps.db.asUser(key), key, deps.clock());
  if (!state) return { outcome: 'session-gone', throughTurn: null, llmCalls: 0 };
  const target = state.last_turn_number - turnsKeptVerbatim(deps.settings);
  let through = state.summary_through_turn;
  let summary = state.summary_text;
  if (target <= (through ?? 0)) return { outcome: 'up-to-date', throughTurn: through, llmCalls: 0 };

  let llmCalls = 0;
  while ((through ?? 0) < target) {
    const turns = await loadTurnsToSummarize(deps.db.asUser(key), key, through ?? 0, target, PAGE_TURNS);
    const chunks = turns.length ? chunkTurns(turns, turnBudget(deps, summary)) : [{ rendered: [], throughTurn: target }];
    for (const chunk of chunks) {
      let next = summary;
      if (chunk.rendered.length) {
        if (deps.llm) {
          next = await foldWithLlm(deps.llm, summary, chunk, deps.settings.maxOutputTokens);
          llmCalls += 1;
        } else {
          next = foldExtractively(summary, chunk, deps.settings.maxOutputTokens);
        }
      }
      const saved = await saveSummary(deps.db.asUser(key), key, {
        text: next,
        throughTurn: chunk.throughTurn,
        expectedThroughTurn: through,
        foldedTurns: turns.filter((t) => t.turn_number > (through ?? 0) && t.turn_number <= chunk.throughTurn).length,
      });
      if (!saved) return { outcome: 'superseded', throughTurn: through, llmCalls };
      deps.log.info({ throughTurn: chunk.throughTurn, turns: chunk.rendered.length }, 'summary advanced');
      summary = next;
      through = chunk.throughTurn;
    }
    if (turns.length < PAGE_TURNS && (through ?? 0) < target) {
      // Turns up to the target were deleted (a cleared session): nothing more to read.
      const saved = await saveSummary(deps.db.asUser(key), key, {
        text: summary,
        throughTurn: target,
        expectedThroughTurn: through,
        foldedTurns: 0,
      });
      if (!saved) return { outcome: 'superseded', throughTurn: through, llmCalls };
      through = target;
    }
  }
  return { outcome: 'summarized', throughTurn: through, llmCalls };
}

/** Tokens left for turns in one call once the instructions and the previous summary are in. */
function turnBudget(deps: SummarizeDeps, previous: string | null): number {
  const frame = countTokens(SUMMARY_SYSTEM_PROMPT) + countTokens(llmUserPrompt(previous, []));
  // The summary grows to at most maxOutputTokens, and config keeps maxInputTokens ≥ 2 × that + 300.
  const previousAllowance = Math.max(0, deps.settings.maxOutputTokens - countTokens(previous ?? ''));
  return Math.max(100, deps.settings.maxInputTokens - frame - previousAllowance - 50);
}

export function summarizationSettingsFrom(config: Config): SummarizationSettings {
  return {
    threshold: config.MEMORY_SUMMARIZATION_THRESHOLD,
    keepRecentTurns: config.MEMORY_MAX_HISTORY_MESSAGES,
    maxInputTokens: config.SUMMARY_MAX_INPUT_TOKENS,
    maxOutputTokens: config.SUMMARY_MAX_TOKENS,
  };
}
