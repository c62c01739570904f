import { createHash } from 'node:crypto';
import type { Identity } from '../../model/identity.js';

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

/**
 * A user's entry under one rule for the path (the threshold and the row cost, hybrid-rank.ts; a
 * process has one, from its settings, but benches and tests vary them).
 */
const lightUserKey = (tenantId: string, userId: string, embeddingModel: string, rule: PathRule): string =>
  createHash('sha1')
    .update(`${tenantId}\u0000${userId}\u0000${embeddingModel}\u0000${rule.exactSearchMaxTurns}\u0000${rule.annRowCost}`)
    .digest('base64');

export interface PathRule {
  exactSearchMaxTurns?: number;
  annRowCost?: number;
}

/**
 * What this process knows of a user's search path before their search (/memoryChat's retrieval and
 * /memory/search alike, one memory for both): `assumeLight` (wasLight) and `knownEpoch` (heavyEpoch,
 * never when assumed light or when the search is exact whatever the history).
 */
export interface PathHint {
  key: string;
  assumeLight: boolean;
  knownEpoch: number | undefined;
}

export function pathHint(identity: Identity, embeddingModel: string, rule: PathRule, exactOnly: boolean): PathHint {
  const key = lightUserKey(identity.tenantId, identity.userId, embeddingModel, rule);
  const assumeLight = wasLight(key);
  return { key, assumeLight, knownEpoch: assumeLight || exactOnly ? undefined : heavyEpoch(key, Date.now()) };
}

/** What the search sent with `hint` found: the user past the threshold or not, and their erasure epoch. */
export function rememberPath(hint: PathHint, heavy: boolean, epoch: number): void {
  rememberLight(hint.key, !heavy);
  rememberHeavy(hint.key, heavy, epoch, hint.knownEpoch !== undefined, Date.now());
}

/**
 * Users whose last retrieval in this process found them below the HNSW threshold: their next one is
 * sent without the HNSW path's branches (hybrid-rank.ts, assumeLight). A hint only: that statement
 * still searches every turn exactly and says whether the user has crossed the threshold since, and
 * the retrieval after it takes the full statement. Kept by a digest of the ids, never the ids.
 */
function wasLight(key: string): boolean {
  return lightUsers.has(key);
}

function rememberLight(key: string, light: boolean): void {
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
function heavyEpoch(key: string, now: number): number | undefined {
  const known = heavyUsers.get(key);
  return known && now - known.countedAt < HEAVY_USER_RECOUNT_MS ? known.epoch : undefined;
}

/**
 * What a retrieval found: `heavy`, with the erasure epoch it read; `assumed` when it was sent with
 * heavyEpoch's epoch, in which case it counted only if the epoch had moved.
 */
function rememberHeavy(key: string, heavy: boolean, epoch: number, assumed: boolean, now: number): void {
  const known = heavyUsers.get(key);
  heavyUsers.delete(key);
  if (!heavy) return;
  const counted = !assumed || known?.epoch !== epoch;
  if (heavyUsers.size >= LIGHT_USERS_MAX) heavyUsers.delete(heavyUsers.keys().next().value!);
  heavyUsers.set(key, { epoch, countedAt: known && !counted ? known.countedAt : now });
}
