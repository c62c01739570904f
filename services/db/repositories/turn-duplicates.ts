import { sql } from '../sql.js';

/**
 * Search shows one turn of a near-duplicate pair (docs/design.md §6, semantic dedup): a turn `t` marked as
 * a duplicate is hidden while its original still exists. When the original is gone (trimmed after
 * summarisation), the duplicate stands in for it, so the question stays findable.
 */
export const VISIBLE_IN_SEARCH = sql`(t.duplicate_of IS NULL OR NOT EXISTS (
    SELECT 1 FROM turns o
    WHERE o.tenant_id = t.tenant_id AND o.user_id = t.user_id
      AND o.session_id = t.session_id AND o.turn_number = t.duplicate_of))`;
