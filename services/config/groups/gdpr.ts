import Type, { type Static } from 'typebox';
import { DURATION_PATTERN, parseDurationMs } from '../duration.js';

/** GDPR requests and the access audit. */
export const GdprSchema = Type.Object({
  GDPR_EXPORT_TTL: Type.String({ pattern: DURATION_PATTERN, default: '7d' }),
  // Erase requests an hour per subject and per requesting user; 0 turns the limit off (docs/configuration.md).
  GDPR_ERASE_REQUESTS_PER_HOUR: Type.Integer({ minimum: 0, default: 5 }),
  // How long the reclaim after an erase waits for other erasures to share it (docs/design.md §7).
  ERASE_RECLAIM_WINDOW: Type.String({ pattern: DURATION_PATTERN, default: '30s' }),
  // How long access-audit entries are kept; retention cleanup deletes older ones (docs/privacy.md#access-audit).
  ACCESS_AUDIT_RETENTION: Type.String({ pattern: DURATION_PATTERN, default: '400d' }),
});

export type GdprVariables = Static<typeof GdprSchema>;

export function deriveGdpr(raw: GdprVariables) {
  return {
    gdprExportTtlMs: parseDurationMs(raw.GDPR_EXPORT_TTL),
    eraseReclaimWindowMs: parseDurationMs(raw.ERASE_RECLAIM_WINDOW),
    accessAuditRetentionMs: parseDurationMs(raw.ACCESS_AUDIT_RETENTION),
  };
}
