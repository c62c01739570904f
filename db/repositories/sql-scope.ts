import type { DatabaseScope } from '../../services/model/identity.js';
import { joinSql, param, type SqlFragment, sql } from '../sql.js';

/**
 * The permission boundary on turns (docs/design.md §3), as SQL over `t.vdp_database_names`: a turn is
 * usable only when its databases lie within the requested ones and within the token's claim.
 * A turn that recorded no databases ran against "all", so a bounded request never uses it.
 * Each bound is one parameter, however often a statement repeats the condition.
 */
/** Whether the request or the token bounds the databases at all. */
export function isBounded(scope: DatabaseScope): boolean {
  return scope.requested !== undefined || scope.allowed !== undefined;
}

export function databaseScopeSql(scope: DatabaseScope): SqlFragment {
  const bounds = [scope.requested, scope.allowed].filter((bound): bound is string[] => bound !== undefined).map(param);
  if (!bounds.length) return sql`TRUE`;
  return joinSql(
    bounds.map((bound) => sql`(cardinality(t.vdp_database_names) > 0 AND t.vdp_database_names <@ ${bound}::text[])`),
    ' AND ',
  );
}
