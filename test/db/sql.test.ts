import { describe, expect, it } from 'vitest';
import { prepared } from '../../services/db/repositories/queryable.js';
import { joinSql, param, type SqlFragment, shapeOf, sql, toQuery } from '../../services/db/sql.js';

describe('sql tagged template', () => {
  it('when values are interpolated, then each is bound where it appears, numbered in order', () => {
    const tenant = 't1';
    expect(toQuery(sql`SELECT 1 FROM turns WHERE tenant_id = ${tenant} AND turn_number > ${3} LIMIT ${10}`)).toEqual({
      text: 'SELECT 1 FROM turns WHERE tenant_id = $1 AND turn_number > $2 LIMIT $3',
      values: ['t1', 3, 10],
    });
  });

  it('when a param() appears several times and fragments nest, then it keeps one number and fragments bind in place', () => {
    const tenant = param('acme');
    const vector = param('[1,2]');
    const scope = joinSql([sql`a <@ ${['x']}::text[]`, sql`b <@ ${['y']}::text[]`], ' AND ');
    const q = toQuery(
      sql`SELECT ${vector}::vector, ${sql`c = ${'z'}`} WHERE tenant_id = ${tenant} AND ${scope} ORDER BY e <=> ${vector}::vector`,
    );
    // Declared parameters come first, in declaration order; the others follow where they appear.
    expect(q.text).toBe('SELECT $2::vector, c = $3 WHERE tenant_id = $1 AND a <@ $4::text[] AND b <@ $5::text[] ORDER BY e <=> $2::vector');
    expect(q.values).toEqual(['acme', '[1,2]', 'z', ['x'], ['y']]);
  });

  it('when a declared parameter is not used, then it is not bound', () => {
    param('unused');
    const used = param(1);
    expect(toQuery(sql`SELECT ${used}::integer`)).toEqual({ text: 'SELECT $1::integer', values: [1] });
  });

  it('when a value looks like SQL, then it is still only a bound value', () => {
    const q = toQuery(sql`SELECT * FROM sessions WHERE session_name = ${"x'; DROP TABLE turns; --"}`);
    expect(q).toEqual({ text: 'SELECT * FROM sessions WHERE session_name = $1', values: ["x'; DROP TABLE turns; --"] });
  });

  describe('statements prepared once per shape', () => {
    // One place in the code, called with different values and options, as a repository is.
    const statement = (tenant: string, names: string[], withLimit: boolean, limit: number): SqlFragment => {
      const t = param(tenant);
      const vector = param('[1,2]');
      const scope = joinSql(
        names.map((n) => sql`${n} = ANY(t.vdp_database_names)`),
        ' AND ',
      );
      return sql`SELECT ${vector}::vector FROM turns t WHERE t.tenant_id = ${t} AND ${scope} ${withLimit ? sql`LIMIT ${limit}` : sql``} AND t.user_id <> ${t}`;
    };

    it('when a statement of one shape runs with other values, then its text and name are the same and its values are its own, as toQuery numbers them', () => {
      const a = prepared(statement('acme', ['x', 'y'], true, 3));
      const b = prepared(statement('globex', ['p', 'q'], true, 7));
      expect(b.name).toBe(a.name);
      expect(b.text).toBe(a.text);
      for (const [fragment, query] of [
        [statement('acme', ['x', 'y'], true, 3), a],
        [statement('globex', ['p', 'q'], true, 7), b],
      ] as const) {
        expect(query.text).toBe(toQuery(fragment).text);
        expect(shapeOf(fragment).values).toEqual(toQuery(fragment).values);
      }
      expect(b.values).toEqual(['globex', '[1,2]', 'p', 'q', 7]);
    });

    it('when the shape differs (another clause, another number of joined conditions), then so do the text and the name', () => {
      const base = prepared(statement('acme', ['x', 'y'], true, 3));
      for (const other of [
        statement('acme', ['x', 'y'], false, 3),
        statement('acme', ['x'], true, 3),
        statement('acme', ['x', 'y', 'z'], true, 3),
      ]) {
        const query = prepared(other);
        expect(query.name).not.toBe(base.name);
        expect(query).toEqual({ name: query.name, ...toQuery(other) });
      }
    });

    it('when the same parameters are declared in another order, then they are numbered as toQuery numbers them', () => {
      const build = (firstDeclared: 'a' | 'b') => {
        const [a, b] =
          firstDeclared === 'a'
            ? [param('A'), param('B')]
            : (() => {
                const y = param('B');
                const x = param('A');
                return [x, y];
              })();
        return sql`SELECT ${a}, ${b}`;
      };
      for (const fragment of [build('a'), build('b'), build('a')]) {
        const query = prepared(fragment);
        expect({ text: query.text, values: query.values }).toEqual(toQuery(fragment));
      }
    });
  });
});
