import { describe, expect, it } from 'vitest';
import { joinSql, param, sql, toQuery } from '../../services/db/sql.js';

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
});
