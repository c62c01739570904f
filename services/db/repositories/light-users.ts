import { createHash } from 'node:crypto';

/** Bounds the process's memory of users: past it the oldest entry goes. */
const LIGHT_USERS_MAX = 10_000;
const lightUsers = new Set<string>();

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
