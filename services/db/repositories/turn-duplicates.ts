import { type Param, type SqlFragment, sql } from '../sql.js';

/**
 * Search shows one turn of a near-duplicate pair (docs/design.md §6, semantic dedup): a turn `t` marked as
 * a duplicate is hidden while its original still exists. When the original is gone (trimmed after
 * summarisation), the duplicate stands in for it, so the question stays findable. The original is
 * looked up by the user's id as a value, not as `t.user_id`: on Citus a subquery correlated on the
 * distribution column is not routed to the user's shard, and the whole statement is refused.
 */
export function visibleInSearch(tenant: Param, user: Param): SqlFragment {
  return sql`(t.duplicate_of IS NULL OR NOT EXISTS (
    SELECT 1 FROM turns o
    WHERE o.tenant_id = ${tenant} AND o.user_id = ${user}
      AND o.session_id = t.session_id AND o.turn_number = t.duplicate_of))`;
}
