import type { DatabaseScope } from '../../services/model/identity.js';

/**
 * The permission boundary on turns (docs/design.md §3), as SQL over `t.vdp_database_names`: a turn is
 * usable only when its databases lie within the requested ones and within the token's claim.
 * A turn that recorded no databases ran against "all", so a bounded request never uses it.
 */
export function databaseScopeSql(scope: DatabaseScope, params: unknown[]): string {
  const clauses: string[] = [];
  for (const bound of [scope.requested, scope.allowed]) {
    if (!bound) continue;
    params.push(bound);
    clauses.push(`(cardinality(t.vdp_database_names) > 0 AND t.vdp_database_names <@ $${params.length}::text[])`);
  }
  return clauses.length ? clauses.join(' AND ') : 'TRUE';
}
