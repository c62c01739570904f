import type { PairExample } from '../../db/repositories/verified-pairs.js';
import type { HistoryTurn, SimilarTurn } from '../../model/turns.js';

/** One piece of memory that may go into a context: what the packer keeps or drops whole. */
export type MemoryItem =
  | { kind: 'history'; turn: HistoryTurn }
  | { kind: 'slots'; slots: Record<string, unknown> }
  | { kind: 'summary'; text: string }
  | { kind: 'pair'; pair: PairExample }
  | { kind: 'similar'; turn: SimilarTurn };

/**
 * Memory in the order it is kept (docs/design.md §4): the latest turn, the slots, the summary, older
 * turns newest first, the tenant's verified pairs, then similar past questions, most similar first.
 */
export function memoryItems(parts: {
  /** Newest first. */
  window: HistoryTurn[];
  slots?: Record<string, unknown>;
  summary: string | null;
  /** Most similar first. */
  similar: SimilarTurn[];
  /** The tenant's verified pairs, best first. */
  pairs?: PairExample[];
}): MemoryItem[] {
  const [latest, ...older] = parts.window;
  return [
    ...(latest ? [{ kind: 'history', turn: latest } as const] : []),
    ...(parts.slots && Object.keys(parts.slots).length ? [{ kind: 'slots', slots: parts.slots } as const] : []),
    ...(parts.summary ? [{ kind: 'summary', text: parts.summary } as const] : []),
    ...older.map((turn) => ({ kind: 'history', turn }) as const),
    ...(parts.pairs ?? []).map((pair) => ({ kind: 'pair', pair }) as const),
    ...parts.similar.map((turn) => ({ kind: 'similar', turn }) as const),
  ];
}

export interface Packing<R> {
  /** Tokens of the rendering with nothing in it (preamble, delimiters). */
  frameTokens: number;
  /** An item's tokens alone, with what it brings along (separators, a heading): an estimate. */
  cost(item: MemoryItem): number;
  /** Renders the kept items; `tokens` of the result is the exact count of what is sent. */
  render(kept: MemoryItem[]): R;
  tokens(rendered: R): number;
  /** Once a history turn does not fit, no older one may follow: the window would have a hole. */
  historyWithoutHoles?: boolean;
}

/**
 * The one greedy token packer behind every context: items are taken in order while their estimated
 * cost fits `budget`, then the kept items are rendered once and counted exactly; only a rendering over
 * the budget is rendered again, with the last kept item dropped. Items are dropped whole, so no tool
 * chain is ever cut in half; `truncated` says something did not fit.
 */
export function packMemory<R>(
  items: MemoryItem[],
  budget: number,
  packing: Packing<R>,
): { kept: MemoryItem[]; rendered: R; truncated: boolean } {
  const kept: MemoryItem[] = [];
  let used = packing.frameTokens;
  let truncated = false;
  let historyStopped = false;
  for (const item of items) {
    if (item.kind === 'history' && historyStopped) continue;
    const cost = packing.cost(item);
    if (used + cost <= budget) {
      kept.push(item);
      used += cost;
    } else {
      truncated = true;
      if (item.kind === 'history' && packing.historyWithoutHoles) historyStopped = true;
    }
  }
  let rendered = packing.render(kept);
  while (kept.length && packing.tokens(rendered) > budget) {
    kept.pop();
    truncated = true;
    rendered = packing.render(kept);
  }
  return { kept, rendered, truncated };
}

/** The kept history turns, oldest first. */
export function historyOf(items: MemoryItem[]): HistoryTurn[] {
  return items.flatMap((i) => (i.kind === 'history' ? [i.turn] : [])).sort((a, b) => a.turn_number - b.turn_number);
}

export function similarOf(items: MemoryItem[]): SimilarTurn[] {
  return items.flatMap((i) => (i.kind === 'similar' ? [i.turn] : []));
}

export function pairsOf(items: MemoryItem[]): PairExample[] {
  return items.flatMap((i) => (i.kind === 'pair' ? [i.pair] : []));
}
