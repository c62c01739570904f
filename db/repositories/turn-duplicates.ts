/**
 * Search shows one turn of a near-duplicate pair (docs/design.md §6, semantic dedup): a turn marked as a
 * duplicate is hidden while its original still exists. When the original is gone (trimmed after
 * summarisation), the duplicate stands in for it, so the question stays findable.
 */
export function visibleInSearchSql(alias: string): string {
  return `(${alias}.duplicate_of IS NULL OR NOT EXISTS (
    SELECT 1 FROM turns o
    WHERE o.tenant_id = ${alias}.tenant_id AND o.user_id = ${alias}.user_id
      AND o.session_id = ${alias}.session_id AND o.turn_number = ${alias}.duplicate_of))`;
}
