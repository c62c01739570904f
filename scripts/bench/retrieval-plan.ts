// The work of a scoped statement (the retrieval statement, /memory/search's) as Postgres plans it:
// used by the benches and by the tests of test/db/repositories/ (memory-retrieval/, hybrid-rank.test.ts), which bound it and tell which path it took.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { type RetrievalRequest, retrieveMemory } from '../../services/db/repositories/memory-retrieval.js';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import { scopeLiterals } from '../../services/db/scoped-statement.js';

export interface PlanNode {
  'Function Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  Plans?: PlanNode[];
}

/** Whether the plan ran the local model's nearest-turns function, which reads its approximate index (migration 020). */
export function ranAnnFunction(node: PlanNode): boolean {
  return (
    (node['Function Name'] === 'nearest_turns_local_hash_v2_384' && (node['Actual Loops'] ?? 0) > 0) ||
    (node.Plans ?? []).some(ranAnnFunction)
  );
}

/** Every row any node of the plan produced or threw away, over all its loops: the work the statement did. */
function rowsExamined(node: PlanNode): number {
  const loops = node['Actual Loops'] ?? 1;
  const own = ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Join Filter'] ?? 0)) * loops;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsExamined(child), 0);
}

/** A bind parameter as the literal EXPLAIN EXECUTE takes: vectors travel in pgvector's binary form. */
export function literal(client: pg.PoolClient, v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (v instanceof Date) return client.escapeLiteral(v.toISOString());
  if (Buffer.isBuffer(v))
    return client.escapeLiteral(`[${Array.from({ length: v.readInt16BE(0) }, (_, i) => v.readFloatBE(4 + 4 * i)).join(',')}]`);
  if (Array.isArray(v)) return client.escapeLiteral(`{${v.map((x) => JSON.stringify(String(x))).join(',')}}`);
  return client.escapeLiteral(String(v));
}

/**
 * Runs the statement that `issue` sends, under `identity`'s scope, as the generic plan a prepared
 * statement ends up with, and returns the rows its plan examined, the plan and the rows it returned.
 * The scope is the service's (scopeLiterals), JIT off with it: on a server built with LLVM the
 * EXPLAIN of a 100,000-turn user's retrieval otherwise compiled it, 2.6 s against 18 ms.
 */
export async function explainScoped(
  pool: pg.Pool,
  identity: { tenantId: string; userId: string },
  issue: (db: Queryable) => Promise<unknown>,
): Promise<{ examined: number; rows: Record<string, unknown>[]; plan: PlanNode }> {
  let statement: pg.QueryConfig | undefined;
  const capture: Queryable = {
    query: async (s) => {
      statement = s as pg.QueryConfig;
      return { rows: [] } as never;
    },
  };
  await issue(capture);
  const client = await pool.connect();
  try {
    await client.query(
      `${scopeLiterals(['memorychat_app', identity.tenantId, identity.userId, 'off'])}; SET LOCAL plan_cache_mode = force_generic_plan`,
    );
    // pg remembers a name per connection with its text: one name per statement explained.
    const name = `explained_${randomUUID().replaceAll('-', '')}`;
    await client.query({ name, text: statement!.text, values: statement!.values });
    const literals = statement!.values!.map((v) => literal(client, v));
    const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${literals.join(', ')})`);
    const result = await client.query({ text: statement!.text, values: statement!.values });
    const plan: PlanNode = rows[0]['QUERY PLAN'][0].Plan;
    return { examined: rowsExamined(plan), rows: result.rows, plan };
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

/** The retrieval statement for `req` (explainScoped), with the similar turns it found. */
export async function explainRetrieval(pool: pg.Pool, req: RetrievalRequest): Promise<{ examined: number; similar: number }> {
  const { examined, rows } = await explainScoped(pool, req.identity, (db) => retrieveMemory(db, req));
  return { examined, similar: rows.filter((r) => r.source === 'similar').length };
}
