import pg from 'pg';
import type { ScopeValues } from './scoped-statement.js';

/**
 * How a scope reaches the workers of a Citus cluster (docs/scaling.md#row-level-security-on-citus).
 * Citus runs a statement's shard queries on the workers over connections of its own, opened as the
 * current role; the settings the row-level security policies read must be there too. Citus sends
 * `SET LOCAL` commands of a transaction block to its workers when `citus.propagate_set_commands` is
 * 'local', and never a `set_config(…, true)`: so on Citus the scope is a `BEGIN` followed by `SET LOCAL`
 * commands, and each statement runs in that block (3 round trips instead of the single server's one).
 * The propagation setting comes first and is not itself sent. `SET` takes no bind parameters: the
 * values are quoted literals, as in scopeLiterals (auth refuses ids with NUL).
 */
export function citusScopeLiterals(scope: ScopeValues): string {
  const [role, tenantId, userId, tenantAdmin] = scope.map((v) => pg.escapeLiteral(v));
  return (
    `BEGIN; SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL role = ${role}; ` +
    `SET LOCAL memorychat.tenant_id = ${tenantId}; SET LOCAL memorychat.user_id = ${userId}; ` +
    `SET LOCAL memorychat.tenant_admin = ${tenantAdmin}; SET LOCAL jit = off`
  );
}

/**
 * Whether the pool's database has the citus extension (a coordinator), asked once; a failed check
 * (the database not reachable yet) is asked again by the next statement.
 */
export function citusCheck(pool: pg.Pool): () => Promise<boolean> {
  let answer: Promise<boolean> | undefined;
  return () => {
    answer ??= pool
      .query<{ citus: boolean }>(`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus`)
      .then((result) => result.rows[0]!.citus)
      .catch((err: unknown) => {
        answer = undefined;
        throw err;
      });
    return answer;
  };
}
