import Type, { type Static } from 'typebox';
import { ConfigError } from '../config-error.js';
import { DURATION_PATTERN, parseDurationMs } from '../duration.js';

/** GDPR requests and the access audit. */
export const GdprSchema = Type.Object({
  GDPR_EXPORT_TTL: Type.String({ pattern: DURATION_PATTERN, default: '7d' }),
  // Erase requests an hour per subject and per requesting user; 0 turns the limit off (docs/configuration.md).
  GDPR_ERASE_REQUESTS_PER_HOUR: Type.Integer({ minimum: 0, default: 5 }),
  // How long the reclaim after an erase waits for other erasures to share it (docs/design.md §7).
  ERASE_RECLAIM_WINDOW: Type.String({ pattern: DURATION_PATTERN, default: '30s' }),
  // How the embedded database frees an erasure's rows: `vacuum` stalls no one and may leave the bytes in
  // pages' free space; `rewrite` leaves no byte under DATA_DIR and holds every request meanwhile (docs/gdpr-storage.md).
  ERASE_RECLAIM: Type.Union([Type.Literal('vacuum'), Type.Literal('rewrite')], { default: 'vacuum' }),
  // How long access-audit entries are kept; retention cleanup deletes older ones (docs/privacy.md#access-audit).
  ACCESS_AUDIT_RETENTION: Type.String({ pattern: DURATION_PATTERN, default: '400d' }),
});

export type GdprVariables = Static<typeof GdprSchema>;

export function deriveGdpr(raw: GdprVariables & { DATABASE_URL?: string }) {
  // On a server the erased rows also live on in its WAL archive, replicas and backups, which no rewrite
  // reaches, while its exclusive lock would stall every /memoryChat: the option would promise too much.
  if (raw.ERASE_RECLAIM === 'rewrite' && raw.DATABASE_URL) {
    throw new ConfigError(
      'ERASE_RECLAIM: `rewrite` is for the embedded database (unset DATABASE_URL); a server keeps erased rows in its WAL archive, replicas and backups (docs/gdpr-storage.md)',
    );
  }
  return {
    gdprExportTtlMs: parseDurationMs(raw.GDPR_EXPORT_TTL),
    eraseReclaimWindowMs: parseDurationMs(raw.ERASE_RECLAIM_WINDOW),
    accessAuditRetentionMs: parseDurationMs(raw.ACCESS_AUDIT_RETENTION),
  };
}
