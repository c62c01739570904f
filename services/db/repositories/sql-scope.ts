import type { DatabaseScope } from '../../model/identity.js';
import { joinSql, param, type SqlFragment, sql } from '../sql.js';

/**
 * The permission boundary on turns (docs/design.md §3), as SQL over `t.vdp_database_names`: a turn is
 * usable only when its databases lie within the requested ones and within the token's claim.
 * A turn that recorded no databases ran against "all", so a bounded request never uses it. The
 * request's `vdp_tag_names` bound the turns' tags in the same way.
 * Each bound is one parameter, however often a statement repeats the condition.
 */
/** Whether the request or the token bounds the databases at all. */
export function isBounded(scope: DatabaseScope): boolean {
  return scope.requested !== undefined || scope.allowed !== undefined || scope.tags !== undefined;
}

export function databaseScopeSql(scope: DatabaseScope): SqlFragment {
  const bounds = [scope.requested, scope.allowed].filter((bound): bound is string[] => bound !== undefined).map(param);
  const conditions = bounds.map((bound) => sql`(cardinality(t.vdp_database_names) > 0 AND t.vdp_database_names <@ ${bound}::text[])`);
  // Tags bound memory the same way: a turn that recorded no tags ran against all of them.
  if (scope.tags) conditions.push(sql`(cardinality(t.vdp_tag_names) > 0 AND t.vdp_tag_names <@ ${param(scope.tags)}::text[])`);
  if (!conditions.length) return sql`TRUE`;
  return joinSql(conditions, ' AND ');
}
