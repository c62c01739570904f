import { type Param, type SqlFragment, sql } from '../sql.js';

/**
 * What /memoryChat may recall from the user's other conversations, besides the database bounds of
 * sql-scope.ts (docs/memory-api.md#memory-scope), as conditions on turns `t`.
 */

/**
 * The user's sessions whose turns memory does not recall: expired ones (not yet removed by retention
 * cleanup), and their other sessions kept to themselves (`memory_scope = 'session'`): such a
 * conversation recalls no other and no other recalls it. A statement reads them once, as a CTE, and
 * each list of candidates checks `t.session_id NOT IN` it (a join to `sessions` probed them once per turn), so
 * each turn is checked against one hash of these ids: read once per list, they were two reads of all
 * of the user's sessions (22,000 rows each at 100,000 turns: docs/performance.md).
 */
export function unrecallableSessions(tenant: Param, user: Param, now: Param | Date, session: Param): SqlFragment {
  return sql`SELECT x.session_id FROM sessions x
    WHERE x.tenant_id = ${tenant} AND x.user_id = ${user}
      AND (x.expires_at <= ${now} OR (x.memory_scope = 'session' AND x.session_id IS DISTINCT FROM ${session}::uuid))`;
}

/**
 * Written by `answerer` (services/config/answerer-identity.ts), or by no answerer of the service
 * (NULL: a turn a client stored through the memory API, bounded by its databases alone); a NULL
 * `answerer` bounds nothing. Turns stored before answerers were recorded read 'unrecorded' (migration
 * 015) and are recalled by none: SQL written for one schema never reaches another's prompt.
 */
export function sameAnswerer(answerer: Param): SqlFragment {
  return sql`(${answerer}::text IS NULL OR t.answerer IS NULL OR t.answerer = ${answerer}::text)`;
}
