import { randomUUID } from 'node:crypto';
import pgvector from 'pgvector';
import { LOCAL_MODEL } from '../../../services/config/config.js';
import type { Queryable } from '../../../services/db/repositories/queryable.js';
import { embedText } from '../../../services/providers/embeddings/local-embedder.js';

/**
 * A session with `turns` turns written straight to the database (thousands in one statement), each
 * with a question, SQL, a result and an embedding, and the user id inside its content too.
 */
export async function seedSession(
  db: Queryable,
  s: {
    tenantId?: string;
    userId: string;
    turns: number;
    expiresAt: Date;
    createdAt?: Date;
    model?: string;
    summary?: string;
    /** The turns are in their model's approximate index (migration 017), as a heavy user's are once marked. */
    annIndexed?: boolean;
  },
): Promise<string> {
  const sessionId = randomUUID();
  const created = s.createdAt ?? new Date(s.expiresAt.getTime() - 3_600_000);
  const tenant = s.tenantId ?? 'default';
  await db.query(
    `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at,
                           turn_count, last_turn_number, summary_text, summary_through_turn)
     VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $7, $8, $9)`,
    [tenant, s.userId, sessionId, `session of ${s.userId}`, created, s.expiresAt, s.turns, s.summary ?? null, s.summary ? 1 : null],
  );
  if (s.turns > 0) {
    const model = s.model ?? `${LOCAL_MODEL}@384`;
    const dims = Number(model.split('@')[1] ?? 384);
    await db.query(
      `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, sql_query,
                          tables_used, vdp_database_names, execution_result, embedding, embedding_model, ann_indexed)
       SELECT $1, $2, $3, n, $4, 'ok', 'Question ' || n || ' from ' || $2 || ' about sales in region ' || (n % 7),
              'Answer ' || n || ' for ' || $2, 'SELECT region, SUM(amount) FROM sales_' || (n % 5) || ' GROUP BY region',
              ARRAY['sales'], ARRAY['db1'], jsonb_build_object('owner', $2::text, 'row', n), $5::vector, $6, $8
       FROM generate_series(1, $7::integer) AS n`,
      [tenant, s.userId, sessionId, created, pgvector.toSql(embedText(`sales ${s.userId}`, dims)!), model, s.turns, s.annIndexed ?? false],
    );
  }
  return sessionId;
}

/** Rows mentioning `needle` anywhere, per table of the public schema (the erase completeness scan). */
export async function rowsMentioning(db: Queryable, needle: string, exceptTables: string[] = []): Promise<Record<string, number>> {
  const { rows: tables } = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
  );
  const out: Record<string, number> = {};
  for (const { table_name } of tables) {
    if (exceptTables.includes(table_name)) continue;
    // Table names come from the catalog, quoted as identifiers; the needle is a parameter.
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${table_name.replace(/"/g, '""')}" x WHERE strpos(x::text, $1) > 0`,
      [needle],
    );
    out[table_name] = rows[0]!.n;
  }
  return out;
}

export async function countUserRows(db: Queryable, userId: string) {
  const { rows } = await db.query<{ sessions: number; turns: number; embeddings: number }>(
    `SELECT (SELECT count(*)::int FROM sessions WHERE user_id = $1) AS sessions,
            (SELECT count(*)::int FROM turns WHERE user_id = $1) AS turns,
            (SELECT count(*)::int FROM turns WHERE user_id = $1 AND embedding IS NOT NULL) AS embeddings`,
    [userId],
  );
  return rows[0]!;
}
