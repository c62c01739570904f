import Type, { type Static } from 'typebox';
import { ConfigError } from '../config-error.js';

/** Rollout: who gets memory. */
export const RolloutSchema = Type.Object({
  // Who gets memory on /memoryChat (docs/privacy.md#rollout); turns are stored for everyone unless
  // MEMORY_STORE_OUTSIDE_ROLLOUT=false.
  MEMORY_ENABLED: Type.Boolean({ default: true }),
  MEMORY_STORE_OUTSIDE_ROLLOUT: Type.Boolean({ default: true }),
  MEMORY_ROLLOUT_PERCENT: Type.Integer({ minimum: 0, maximum: 100, default: 100 }),
  // Per-tenant percentages replacing MEMORY_ROLLOUT_PERCENT: `acme=100,globex=10`.
  MEMORY_ROLLOUT_TENANTS: Type.Optional(Type.String({ pattern: '^[^=,]+=\\d{1,3}(,[^=,]+=\\d{1,3})*$' })),
});

export type RolloutVariables = Static<typeof RolloutSchema>;

export function deriveRollout(raw: RolloutVariables) {
  const rolloutTenantPercent = new Map<string, number>();
  for (const entry of raw.MEMORY_ROLLOUT_TENANTS?.split(',') ?? []) {
    const [tenant = '', percent = ''] = entry.split('=');
    if (Number(percent) > 100) throw new ConfigError(`MEMORY_ROLLOUT_TENANTS: "${tenant}" has ${percent}%; at most 100`);
    rolloutTenantPercent.set(tenant.trim(), Number(percent));
  }
  return { rolloutTenantPercent };
}
