import { sql, toQuery } from '../sql.js';
import type { Queryable } from './queryable.js';

/** A tenant's own settings (migration 023); a tenant that never changed one has the defaults. */
export interface TenantSettings {
  pairs_from_positive_feedback: boolean;
}

const DEFAULTS: TenantSettings = { pairs_from_positive_feedback: false };

export async function readTenantSettings(db: Queryable, tenantId: string): Promise<TenantSettings> {
  const { rows } = await db.query<TenantSettings>(
    toQuery(sql`SELECT pairs_from_positive_feedback FROM tenant_settings WHERE tenant_id = ${tenantId}`),
  );
  return rows[0] ?? DEFAULTS;
}

/** Written by the tenant's admins only (row-level security). */
export async function writeTenantSettings(db: Queryable, tenantId: string, settings: TenantSettings, now: Date): Promise<TenantSettings> {
  const { rows } = await db.query<TenantSettings>(
    toQuery(sql`INSERT INTO tenant_settings (tenant_id, pairs_from_positive_feedback, updated_at)
     VALUES (${tenantId}, ${settings.pairs_from_positive_feedback}, ${now})
     ON CONFLICT (tenant_id) DO UPDATE SET pairs_from_positive_feedback = EXCLUDED.pairs_from_positive_feedback, updated_at = EXCLUDED.updated_at
     RETURNING pairs_from_positive_feedback`),
  );
  return rows[0]!;
}
