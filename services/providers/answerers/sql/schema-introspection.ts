import { inReadOnlyTransaction, type SqlDatabase } from './sql-database.js';

export interface SchemaColumn {
  name: string;
  type: string;
  comment: string | null;
}

export interface SchemaTable {
  schema: string;
  name: string;
  comment: string | null;
  columns: SchemaColumn[];
  primaryKey: string[];
  foreignKeys: { columns: string[]; references: string }[];
}

/** The schema's reads take their connection as a tenant of their own, which no tenant id can be. */
const SCHEMA_READER = '\u0000schema';

/**
 * Tables, views and their columns, keys and comments in the allow-listed schemas that the reading
 * role may SELECT, read the way the SQL will be run (same role, same read-only transaction), so the
 * LLM is never shown a table it cannot read. `tables` narrows further (`name` or `schema.name`).
 */
export async function introspectSchema(db: SqlDatabase, tables?: string[]): Promise<SchemaTable[]> {
  const rows = await inReadOnlyTransaction(
    db,
    async (client) => {
      const columns = await client.query<{
        schema: string;
        table: string;
        table_comment: string | null;
        column: string;
        type: string;
        column_comment: string | null;
      }>(
        `SELECT n.nspname AS schema, c.relname AS table, obj_description(c.oid, 'pg_class') AS table_comment,
              a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type, col_description(c.oid, a.attnum) AS column_comment
         FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
          AND has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT')
        ORDER BY n.nspname, c.relname, a.attnum`,
        [db.schemas],
      );
      const keys = await client.query<{ schema: string; table: string; type: 'p' | 'f'; columns: string[]; references: string | null }>(
        `SELECT n.nspname AS schema, c.relname AS table, con.contype AS type,
              ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(num, ord)
                      JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.ord)::text[] AS columns,
              CASE WHEN con.contype = 'f' THEN
                (SELECT fn.nspname || '.' || fc.relname FROM pg_class fc JOIN pg_namespace fn ON fn.oid = fc.relnamespace
                  WHERE fc.oid = con.confrelid) || '(' ||
                array_to_string(ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(num, ord)
                  JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num ORDER BY k.ord), ', ') || ')'
              END AS references
         FROM pg_constraint con
         JOIN pg_class c ON c.oid = con.conrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($1::text[]) AND con.contype IN ('p', 'f')
        ORDER BY con.conname`,
        [db.schemas],
      );
      return { columns: columns.rows, keys: keys.rows };
    },
    { budget: { leftMs: db.statementTimeoutMs }, tenant: SCHEMA_READER },
  );

  const byName = new Map<string, SchemaTable>();
  for (const row of rows.columns) {
    const id = `${row.schema}.${row.table}`;
    let table = byName.get(id);
    if (!table) {
      table = { schema: row.schema, name: row.table, comment: row.table_comment, columns: [], primaryKey: [], foreignKeys: [] };
      byName.set(id, table);
    }
    table.columns.push({ name: row.column, type: row.type, comment: row.column_comment });
  }
  for (const key of rows.keys) {
    const table = byName.get(`${key.schema}.${key.table}`);
    if (!table) continue;
    if (key.type === 'p') table.primaryKey = key.columns;
    else if (key.references) table.foreignKeys.push({ columns: key.columns, references: key.references });
  }
  const all = [...byName.values()];
  if (!tables) return all;
  const wanted = new Set(tables.map((t) => t.toLowerCase()));
  return all.filter((t) => wanted.has(t.name.toLowerCase()) || wanted.has(`${t.schema}.${t.name}`.toLowerCase()));
}

/**
 * The schema, read once and then again whenever the copy is older than `refreshMs`: the stale copy
 * keeps serving while the new one is read in the background, and a failed refresh keeps it.
 */
export function createSchemaCache(read: () => Promise<SchemaTable[]>, refreshMs: number, onRefreshError: (err: unknown) => void) {
  let current: { tables: SchemaTable[]; readAt: number } | undefined;
  let reading: Promise<SchemaTable[]> | undefined;
  const refresh = () => {
    reading ??= read()
      .then((tables) => {
        current = { tables, readAt: Date.now() };
        return tables;
      })
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
  return async function schema(): Promise<SchemaTable[]> {
    if (!current) return refresh();
    if (Date.now() - current.readAt > refreshMs) refresh().catch(onRefreshError);
    return current.tables;
  };
}
