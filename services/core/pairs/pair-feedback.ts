import { randomUUID } from 'node:crypto';
import { readTenantSettings } from '../../db/repositories/tenant-settings.js';
import { findPairOfTurn, insertPairFromTurn, setPairFeedback, type TurnSource } from '../../db/repositories/verified-pairs.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryDeps } from '../deps.js';
import { PAIRS_METADATA_KEY } from './pair-recall.js';

/** The pairs a stored turn's memory held (chat.ts stores their ids in its metadata). */
export function pairsOfTurn(metadata: Record<string, unknown>): string[] {
  const ids = metadata[PAIRS_METADATA_KEY];
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
}

/**
 * After a user rated a turn: a down rating counts against each pair its memory held (an up one takes
 * that back), and where the tenant turned it on, an up-rated turn whose SQL ran becomes a pair.
 */
export async function pairsAfterRating(
  deps: Pick<MemoryDeps, 'db' | 'clock'>,
  identity: Identity,
  turn: { sessionId: string; turnNumber: number; metadata: Record<string, unknown> },
  rating: 'up' | 'down',
): Promise<void> {
  const db = deps.db.asUser(identity);
  const source: TurnSource = {
    tenantId: identity.tenantId,
    userId: identity.userId,
    sessionId: turn.sessionId,
    turnNumber: turn.turnNumber,
  };
  const now = deps.clock();
  await setPairFeedback(db, source, pairsOfTurn(turn.metadata), rating, now);
  if (rating !== 'up' || !(await readTenantSettings(db, identity.tenantId)).pairs_from_positive_feedback) return;
  if (await findPairOfTurn(db, source)) return;
  // insertPairFromTurn takes only an answered turn with SQL: others stay as they are.
  await insertPairFromTurn(db, source, { pairId: randomUUID(), via: 'feedback', now });
}
