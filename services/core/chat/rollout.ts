import { createHash } from 'node:crypto';
import type { Identity } from '../../model/identity.js';
import type { RolloutSettings } from '../deps.js';

/** Why memory was or was not used for a request; the reply and the metrics carry it. */
export type MemoryReason = 'applied' | 'use_memory_false' | 'memory_disabled' | 'outside_rollout' | 'memory_unavailable' | 'memory_command';

/**
 * The user's rollout bucket, 0–99: the first 32 bits of sha256(tenant, user) modulo 100. Deterministic,
 * so a user stays in one group across requests, replicas and restarts; and a user in at p% is in at
 * every higher p, so raising the percentage only adds users.
 */
export function rolloutBucket(identity: Pick<Identity, 'tenantId' | 'userId'>): number {
  return createHash('sha256').update(`${identity.tenantId}\u0000${identity.userId}`).digest().readUInt32BE(0) % 100;
}

function inRollout(settings: RolloutSettings, identity: Pick<Identity, 'tenantId' | 'userId'>): boolean {
  const percent = settings.tenantPercent.get(identity.tenantId) ?? settings.percent;
  // The hash is only worth computing for a partial rollout.
  if (percent >= 100) return true;
  return percent > 0 && rolloutBucket(identity) < percent;
}

/** Whether memory may be used for this caller's request, and if not, why. */
export function memoryDecision(
  settings: RolloutSettings,
  identity: Pick<Identity, 'tenantId' | 'userId'>,
  requested: boolean,
): { applied: boolean; reason: MemoryReason } {
  if (!settings.enabled) return { applied: false, reason: 'memory_disabled' };
  if (!requested) return { applied: false, reason: 'use_memory_false' };
  if (!inRollout(settings, identity)) return { applied: false, reason: 'outside_rollout' };
  return { applied: true, reason: 'applied' };
}

/**
 * Whether /memoryChat keeps this caller's turns: always inside the rollout, and outside it unless
 * MEMORY_STORE_OUTSIDE_ROLLOUT=false. A request's own `use_memory: false` never stops storage.
 */
export function storesTurns(settings: RolloutSettings, identity: Pick<Identity, 'tenantId' | 'userId'>): boolean {
  return settings.storeOutside || (settings.enabled && inRollout(settings, identity));
}
