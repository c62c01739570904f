import { tableOwnName } from './sql-identifiers.js';

/**
 * The views of a turn's `tables_used` that its SQL read. The Denodo AI SDK's `tables_used` are every
 * view its search considered for the question (`vector_search_tables`: the `vector_search_k` nearest,
 * their associations and `use_views`, up to `vector_search_total_limit`), in every release read, not
 * the ones its SQL read. The SDK tells those apart itself by finding a view's name in the query with
 * its double quotes removed (`view_name in query.replace('"', '')`); so does this, as a whole name and
 * in any case, and failing that (SQL that names its tables without their database) by their own names.
 * A turn without SQL (a clarifying question: its views are the candidates), with one view, or whose
 * SQL names none of them keeps them all. A text match, not a parse: a column that bears a view's name
 * keeps that view too, as keeping them all would.
 */
export function tablesRead(sqlQuery: string | null | undefined, tablesUsed: readonly string[]): readonly string[] {
  if (!sqlQuery || tablesUsed.length < 2) return tablesUsed;
  const sql = unquoted(sqlQuery);
  const names = tablesUsed.map(unquoted);
  const named = tablesUsed.filter((_, i) => namesWhole(sql, names[i]!));
  if (named.length) return named;
  const byOwnName = tablesUsed.filter((table) => namesWhole(sql, tableOwnName(table)));
  return byOwnName.length ? byOwnName : tablesUsed;
}

/** tablesRead of a stored turn or verified pair: the views its rows came from. */
export function tablesReadOf(item: { sql_query: string | null; tables_used: readonly string[] }): readonly string[] {
  return tablesRead(item.sql_query, item.tables_used);
}

const unquoted = (text: string) => text.replaceAll('"', '').trim().toLowerCase();

const IDENTIFIER_CHAR = /[\p{L}\p{N}_$]/u;

/** `name` stands in `sql` with no identifier character right before or after it: `db.sales` is not in `db.sales_2023`. */
function namesWhole(sql: string, name: string): boolean {
  if (!name) return false;
  for (let at = sql.indexOf(name); at >= 0; at = sql.indexOf(name, at + 1)) {
    const before = at > 0 ? sql[at - 1]! : '';
    const after = sql[at + name.length] ?? '';
    if (!IDENTIFIER_CHAR.test(before) && !IDENTIFIER_CHAR.test(after)) return true;
  }
  return false;
}
