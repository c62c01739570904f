import { createHash } from 'node:crypto';
import type { Identity } from '../../model/identity.js';

/** MEMORY_ENABLED, MEMORY_ROLLOUT_PERCENT and MEMORY_ROLLOUT_TENANTS (docs/privacy.md#rollout). */
export interface RolloutSettings {
  enabled: boolean;
  percent: number;
  /** Per-tenant percentages that replace `percent` for that tenant. */
  tenantPercent: ReadonlyMap<string, number>;
}

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

/** Whether memory may be used for this caller's request, and if not, why. */
export function memoryDecision(
  settings: RolloutSettings,
  identity: Pick<Identity, 'tenantId' | 'userId'>,
  requested: boolean,
): { applied: boolean; reason: MemoryReason } {
  if (!settings.enabled) return { applied: false, reason: 'memory_disabled' };
  if (!requested) return { applied: false, reason: 'use_memory_false' };
  const percent = settings.tenantPercent.get(identity.tenantId) ?? settings.percent;
  // The hash is only worth computing for a partial rollout.
  if (percent >= 100) return { applied: true, reason: 'applied' };
  if (percent <= 0 || rolloutBucket(identity) >= percent) return { applied: false, reason: 'outside_rollout' };
  return { applied: true, reason: 'applied' };
}
