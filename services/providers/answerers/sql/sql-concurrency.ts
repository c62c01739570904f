import { AppError } from '../../../model/errors.js';
import type { Identity } from '../../../model/identity.js';

export interface ConcurrencyLimits {
  /** SQL_MAX_CONCURRENT_PER_USER: one user's questions the answerer works on at once. */
  perUser: number;
  /** SQL_MAX_CONCURRENT_PER_TENANT: the same for all the users of a tenant. */
  perTenant: number;
}

/**
 * Bounds the questions one user and one tenant may have in the sql answerer at once, in this
 * process: without it, one user's slow statements took every connection of SQL_POOL_MAX and another
 * tenant's `SELECT 1` waited for them. A question beyond either bound is refused at once (429),
 * before the LLM is paid for; a slot is held from the first LLM call to the last row.
 */
export function createConcurrencyLimiter(limits: ConcurrencyLimits) {
  const running = new Map<string, number>();
  const take = (key: string) => running.set(key, (running.get(key) ?? 0) + 1);
  const give = (key: string) => {
    const left = (running.get(key) ?? 1) - 1;
    if (left > 0) running.set(key, left);
    else running.delete(key);
  };
  return {
    /** Takes a slot for the user and the tenant, or throws `sql-queries-limited`; the result gives them back. */
    acquire(identity: Pick<Identity, 'tenantId' | 'userId'>): () => void {
      const tenant = `tenant\u0000${identity.tenantId}`;
      const user = `user\u0000${identity.tenantId}\u0000${identity.userId}`;
      if ((running.get(user) ?? 0) >= limits.perUser) {
        throw new AppError(
          'sql-queries-limited',
          `you have ${limits.perUser} questions in the SQL answerer already (SQL_MAX_CONCURRENT_PER_USER); ask again when one is answered`,
        );
      }
      if ((running.get(tenant) ?? 0) >= limits.perTenant) {
        throw new AppError(
          'sql-queries-limited',
          `your organisation has ${limits.perTenant} questions in the SQL answerer already (SQL_MAX_CONCURRENT_PER_TENANT); ask again when one is answered`,
        );
      }
      take(user);
      take(tenant);
      let given = false;
      return () => {
        if (given) return;
        given = true;
        give(user);
        give(tenant);
      };
    },
  };
}
