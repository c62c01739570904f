import { createHash } from 'node:crypto';
import type { Identity } from '../../model/identity.js';

/*
 * What a process remembers of each user's search path (hybrid-rank.ts), for /memoryChat's retrieval
 * and /memory/search alike: whether their last search found them below the threshold, or counted
 * them past it. A hint only (both paths return the nearest turns), kept by a digest of the ids, never
 * the ids.
 */

/** Bounds the memory: past it the oldest entry goes. */
const USERS_MAX = 10_000;
/**
 * How long a count that found a user past the threshold stands in for the next counts. The decision
 * also depends on the index's row count (it grows as other users cross the threshold) and on the
 * user's sessions (retention removes expired ones, a client may delete some): both move slowly.
 */
const HEAVY_USER_RECOUNT_MS = 60_000;
/** Below the threshold; or past it, with the erasure epoch and the turns the count read, and when it counted. */
type Known = { light: true } | { light: false; epoch: number; turns: number; countedAt: number };
const users = new Map<string, Known>();

/** The settings that decide the path (hybrid-rank.ts): one per process, but benches and tests vary them. */
export interface PathRule {
  exactSearchMaxTurns?: number;
  annRowCost?: number;
}

/**
 * What the process knows before a user's search. `assumeLight`: their last search found them below
 * the threshold, so this one is sent without the approximate path's branches; it still says whether they
 * have crossed it since. `known`: it counted them past the threshold less than
 * HEAVY_USER_RECOUNT_MS ago with this erasure epoch, so this search decides on that count (the path,
 * and the probes for their share of the index: hybrid-rank.ts) without counting their sessions' turns
 * again (22,000 rows at 100,000 turns) unless the epoch moved (an erasure removed their history).
 * Never for a search that is exact whatever the history.
 */
export interface PathHint {
  key: string;
  assumeLight: boolean;
  /** The erasure epoch and the user's turns as last counted, when the count stands. */
  known: { epoch: number; turns: number } | undefined;
}

export function pathHint(identity: Identity, embeddingModel: string, rule: PathRule, exactOnly: boolean): PathHint {
  const key = createHash('sha1')
    .update(`${identity.tenantId}\u0000${identity.userId}\u0000${embeddingModel}\u0000${rule.exactSearchMaxTurns}\u0000${rule.annRowCost}`)
    .digest('base64');
  const known = users.get(key);
  if (known?.light) return { key, assumeLight: true, known: undefined };
  const recent = known !== undefined && !exactOnly && Date.now() - known.countedAt < HEAVY_USER_RECOUNT_MS;
  return { key, assumeLight: false, known: recent ? { epoch: known.epoch, turns: known.turns } : undefined };
}

/** What the search sent with `hint` found: the user past the threshold or not, their erasure epoch and turns. */
export function rememberPath(hint: PathHint, heavy: boolean, epoch: number, turns: number): void {
  const known = users.get(hint.key);
  users.delete(hint.key);
  if (users.size >= USERS_MAX) users.delete(users.keys().next().value!);
  if (!heavy) {
    users.set(hint.key, { light: true });
    return;
  }
  // Sent with the epoch it found, the statement did not count: the earlier count's time stands.
  const counted = hint.known?.epoch !== epoch;
  const countedAt = !counted && known && !known.light ? known.countedAt : Date.now();
  users.set(hint.key, { light: false, epoch, turns, countedAt });
}
