/**
 * SQL that reads as SQL: sql`SELECT … WHERE tenant_id = ${tenantId}` binds each value where it appears
 * ($1, $2, … in order of appearance), so no statement counts parameter positions. A nested sql``
 * fragment is inlined with its values; a tagged literal without values is constant text (column
 * lists, a choice between two clauses). `param(value)` binds one value once however often it appears
 * (a vector compared in three places, the tenant of every joined table); such parameters take the
 * first numbers, in the order they were declared, so `tenant` and `user` declared first are $1 and $2.
 */
export class SqlFragment {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

let declared = 0;

export class Param {
  readonly order = declared++;
  constructor(readonly value: unknown) {}
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): SqlFragment {
  return new SqlFragment(strings, values);
}

/** A value bound to one parameter number wherever it appears in a statement. */
export function param(value: unknown): Param {
  return new Param(value);
}

/** Fragments joined with constant text, e.g. conditions with ' AND '. */
export function joinSql(fragments: SqlFragment[], separator: string): SqlFragment {
  const strings = ['', ...fragments.slice(1).map(() => separator), ''];
  return new SqlFragment(strings, fragments);
}

/** The statement's text and values, as pg takes them. */
export function toQuery(fragment: SqlFragment): { text: string; values: unknown[] } {
  const params = new Set<Param>();
  const collect = (f: SqlFragment): void => {
    for (const value of f.values) {
      if (value instanceof SqlFragment) collect(value);
      else if (value instanceof Param) params.add(value);
    }
  };
  collect(fragment);
  const ordered = [...params].sort((a, b) => a.order - b.order);
  const numbers = new Map(ordered.map((p, i) => [p, i + 1]));
  const values: unknown[] = ordered.map((p) => p.value);
  const bind = (value: unknown): string => {
    if (value instanceof SqlFragment) return render(value);
    if (value instanceof Param) return `$${numbers.get(value)}`;
    values.push(value);
    return `$${values.length}`;
  };
  const render = (f: SqlFragment): string =>
    f.strings.reduce((text, part, i) => text + part + (i < f.values.length ? bind(f.values[i]) : ''), '');
  return { text: render(fragment), values };
}
