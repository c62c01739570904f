import type { BuiltContext } from '../context/chat-block.js';
import { databaseNames } from '../database-names.js';
import { tablesReadOf } from '../search-terms/tables-read.js';

/**
 * At most this many views are pinned from memory. The Denodo AI SDK considers at most
 * `vector_search_total_limit` (20) views per question, its own `vector_search_k` (5) nearest among
 * them, and each view's schema goes into every one of its prompts.
 */
export const MAX_PINNED_VIEWS = 10;

/**
 * The `use_views` sent to the answerer: the caller's, then the candidate views of a clarifying question
 * the latest turn asked (the question answers it), then the views the memory block's SQL read (latest
 * turn first, then similar past turns, then the tenant's verified pairs), within the caller's `vdp_database_names`. The Denodo
 * AI SDK chooses its views by embedding `question` alone, so a follow-up such as "What about 2023?"
 * finds none of the views its earlier SQL used unless they are named here (docs/denodo-ai-sdk.md).
 * Undefined when there is nothing to send.
 */
export function pinnedViews(context: BuiltContext, callerUseViews: unknown, databases: string[] | undefined): string[] | undefined {
  // A list or a comma-separated string, whichever form the SDK release takes (docs/denodo-ai-sdk.md#releases).
  const caller = databaseNames(callerUseViews) ?? [];
  // The question answers a clarifying question when that was the latest turn: its candidate views first.
  const latest = context.history.at(-1);
  const candidates = latest?.asks_clarification ? latest.tables_used : [];
  const fromMemory = [
    ...candidates,
    ...[...context.history]
      .reverse()
      .concat(context.similar)
      .filter((turn) => turn.status === 'ok' && turn.sql_query)
      .flatMap(tablesReadOf),
    ...context.pairs.flatMap(tablesReadOf),
  ].filter((view) => withinDatabases(view, databases));
  const pinned = [...new Set(fromMemory)].filter((view) => !caller.includes(view)).slice(0, MAX_PINNED_VIEWS);
  const all = [...caller, ...pinned];
  return all.length ? all : undefined;
}

/** A view is `database.view`; with databases named, only theirs are pinned (a bare name has no database to check). */
function withinDatabases(view: string, databases: string[] | undefined): boolean {
  if (!databases?.length) return true;
  const dot = view.indexOf('.');
  if (dot <= 0) return false;
  return databases.includes(view.slice(0, dot).replaceAll('"', ''));
}
