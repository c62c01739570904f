import Type, { type Static } from 'typebox';
import { ConfigError } from '../config-error.js';
import { DURATION_PATTERN, parseDurationMs } from '../duration.js';

/** Idempotency-Key replays. */
export const IdempotencySchema = Type.Object({
  // How long a completed Idempotency-Key replays its response (docs/idempotency.md).
  IDEMPOTENCY_TTL: Type.String({ pattern: DURATION_PATTERN, default: '24h' }),
  // How long a running request's claim on its key lasts unless renewed (renewed every third of it):
  // after a crash, a retry waits at most this long before it runs.
  IDEMPOTENCY_CLAIM_LEASE: Type.String({ pattern: DURATION_PATTERN, default: '15s' }),
});

export type IdempotencyVariables = Static<typeof IdempotencySchema>;

export function deriveIdempotency(raw: IdempotencyVariables) {
  if (parseDurationMs(raw.IDEMPOTENCY_CLAIM_LEASE) < 1000) {
    throw new ConfigError(`IDEMPOTENCY_CLAIM_LEASE: must be at least 1s (got "${raw.IDEMPOTENCY_CLAIM_LEASE}")`);
  }
  return {
    idempotencyTtlMs: parseDurationMs(raw.IDEMPOTENCY_TTL),
    idempotencyClaimLeaseMs: parseDurationMs(raw.IDEMPOTENCY_CLAIM_LEASE),
  };
}
