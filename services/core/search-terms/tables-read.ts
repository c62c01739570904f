import { sqlIdentifiers, tableOwnName } from './sql-identifiers.js';

/**
 * The views of a turn's `tables_used` that its SQL read. The Denodo AI SDK's `tables_used` are every
 * view its search considered for the question (`vector_search_tables`: the `vector_search_k` nearest,
 * their associations and `use_views`, up to `vector_search_total_limit`), in every release read, not
 * the ones its SQL read. The SDK tells those apart itself by finding a view's qualified name in the
 * query with its double quotes removed (`view_name in query.replace('"', '')`); so does this, as a
 * whole name and in any case, and failing that (SQL that names its tables without their database) by
 * the tables the SQL reads, by their own names. A turn without SQL (a clarifying question: its views
 * are the candidates), with one view, or whose SQL reads none of them, keeps them all.
 */
export function tablesRead(sqlQuery: string | null | undefined, tablesUsed: readonly string[]): readonly string[] {
  if (!sqlQuery || tablesUsed.length < 2) return tablesUsed;
  const sql = unquoted(sqlQuery);
  const named = tablesUsed.filter((table) => table.includes('.') && namesWhole(sql, unquoted(table)));
  if (named.length) return named;
  const read = new Set(sqlIdentifiers(sqlQuery).tables);
  const byOwnName = tablesUsed.filter((table) => read.has(tableOwnName(table)));
  return byOwnName.length ? byOwnName : tablesUsed;
}

const unquoted = (text: string) => text.replaceAll('"', '').toLowerCase();

const IDENTIFIER_CHAR = /[\p{L}\p{N}_$]/u;

/** `name` stands in `sql` with no identifier character right before or after it: `db.sales` is not in `db.sales_2023`. */
function namesWhole(sql: string, name: string): boolean {
  for (let at = sql.indexOf(name); at >= 0; at = sql.indexOf(name, at + 1)) {
    const before = at > 0 ? sql[at - 1]! : '';
    const after = sql[at + name.length] ?? '';
    if (!IDENTIFIER_CHAR.test(before) && !IDENTIFIER_CHAR.test(after)) return true;
  }
  return false;
}
