import { createHash } from 'node:crypto';

/** Bounds the process's memory of users: past it the oldest entry goes. */
const LIGHT_USERS_MAX = 10_000;
const lightUsers = new Set<string>();
/**
 * How long a count that found a user past the threshold stands in for the next counts. The decision
 * also depends on the index's row count (it grows as other users cross the threshold) and on the
 * user's sessions (retention removes expired ones, a client may delete some): both move slowly, and
 * the decision is a hint for the path, both of which return the nearest turns.
 */
const HEAVY_USER_RECOUNT_MS = 60_000;
/** Per user past the threshold: the erasure epoch the count read with it, and when it counted. */
const heavyUsers = new Map<string, { epoch: number; countedAt: number }>();

/** A user's entry, computed once per retrieval for both wasLight and rememberLight. */
export const lightUserKey = (tenantId: string, userId: string, embeddingModel: string): string =>
  createHash('sha1').update(`${tenantId}\u0000${userId}\u0000${embeddingModel}`).digest('base64');

/**
 * Users whose last retrieval in this process found them below the HNSW threshold: their next one is
 * sent without the HNSW path's branches (hybrid-rank.ts, assumeLight). A hint only: that statement
 * still searches every turn exactly and says whether the user has crossed the threshold since, and
 * the retrieval after it takes the full statement. Kept by a digest of the ids, never the ids.
 */
export function wasLight(key: string): boolean {
  return lightUsers.has(key);
}

export function rememberLight(key: string, light: boolean): void {
  lightUsers.delete(key);
  if (!light) return;
  if (lightUsers.size >= LIGHT_USERS_MAX) lightUsers.delete(lightUsers.values().next().value!);
  lightUsers.add(key);
}

/**
 * The erasure epoch with which this process counted the user past the threshold less than
 * HEAVY_USER_RECOUNT_MS ago, if it did: their retrieval then takes them as past it without counting
 * their sessions' turns again (all of their sessions: 22,000 rows at 100,000 turns), as long as the
 * epoch has not moved (an erasure removed their history). Undefined: count.
 */
export function heavyEpoch(key: string, now: number): number | undefined {
  const known = heavyUsers.get(key);
  return known && now - known.countedAt < HEAVY_USER_RECOUNT_MS ? known.epoch : undefined;
}

/**
 * What a retrieval found: `heavy`, with the erasure epoch it read; `assumed` when it was sent with
 * heavyEpoch's epoch, in which case it counted only if the epoch had moved.
 */
export function rememberHeavy(key: string, heavy: boolean, epoch: number, assumed: boolean, now: number): void {
  const known = heavyUsers.get(key);
  heavyUsers.delete(key);
  if (!heavy) return;
  const counted = !assumed || known?.epoch !== epoch;
  if (heavyUsers.size >= LIGHT_USERS_MAX) heavyUsers.delete(heavyUsers.keys().next().value!);
  heavyUsers.set(key, { epoch, countedAt: known && !counted ? known.countedAt : now });
}
