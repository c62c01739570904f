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

/**
 * What a statement's text depends on, without building the text: the template literals it is made of
 * (by identity: a tagged template's strings array is the same object on every call from one place in
 * the code; other constant text by content), where fragments nest, and which bound value is which
 * declared parameter. Two fragments with the same key have the same text (toQuery), so the text and
 * its prepared statement's name are built once per shape (db/repositories/queryable.ts); `values`
 * are this fragment's, in toQuery's order.
 */
export function shapeOf(fragment: SqlFragment): { key: string; values: unknown[] } {
  const params: Param[] = [];
  const paramIndex = new Map<Param, number>();
  const plain: unknown[] = [];
  const keyOf = (f: SqlFragment): string => {
    let key = constantTextKey(f.strings);
    for (const value of f.values) {
      if (value instanceof SqlFragment) key += `(${keyOf(value)})`;
      else if (value instanceof Param) {
        let index = paramIndex.get(value);
        if (index === undefined) {
          index = params.length;
          paramIndex.set(value, index);
          params.push(value);
        }
        key += `$${index}`;
      } else {
        plain.push(value);
        key += '?';
      }
    }
    return key;
  };
  const structure = keyOf(fragment);
  const ordered = [...params].sort((a, b) => a.order - b.order);
  // The numbers toQuery gives the parameters follow their declaration order, which the structure alone does not fix.
  const numbering = params.map((p) => ordered.indexOf(p)).join(',');
  return { key: `${structure}|${numbering}`, values: [...ordered.map((p) => p.value), ...plain] };
}

const templateIds = new WeakMap<readonly string[], number>();
let nextTemplateId = 0;

function constantTextKey(strings: readonly string[]): string {
  if (!Object.hasOwn(strings, 'raw')) return JSON.stringify(strings);
  let id = templateIds.get(strings);
  if (id === undefined) {
    id = nextTemplateId++;
    templateIds.set(strings, id);
  }
  return `#${id}`;
}
