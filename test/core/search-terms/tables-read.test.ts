import { describe, expect, it } from 'vitest';
import { tablesRead } from '../../../services/core/search-terms/tables-read.js';

// A Denodo AI SDK reply: tables_used are the views its search considered, its SQL read one of them.
const CONSIDERED = ['hr_db.employees', 'sales_db.customers', 'sales_db.sales'];

describe('the views of tables_used a turn’s SQL read', () => {
  it('when the SDK lists every view its search considered, then only those its SQL names are read', () => {
    expect(tablesRead('SELECT * FROM "sales_db"."sales" WHERE "year" = 2024', CONSIDERED)).toEqual(['sales_db.sales']);
    expect(tablesRead('SELECT c.name FROM sales_db.customers c JOIN sales_db.sales s ON s.id = c.id', CONSIDERED)).toEqual([
      'sales_db.customers',
      'sales_db.sales',
    ]);
  });

  it('when names differ in quotes or case, then they are one view; a longer name holding it is another', () => {
    expect(tablesRead('SELECT * FROM Sales_DB.Sales', ['"sales_db"."sales"'])).toEqual(['"sales_db"."sales"']);
    expect(tablesRead('SELECT * FROM sales_db.sales_2023', ['sales_db.sales', 'sales_db.sales_2023'])).toEqual(['sales_db.sales_2023']);
  });

  it('when the SQL names its tables without their database, then the views are read by their own names', () => {
    expect(tablesRead('SELECT count(*) FROM singer', ['concert_singer.singer', 'concert_singer.concert'])).toEqual([
      'concert_singer.singer',
    ]);
    // A text match: a column named as a view keeps that view, as keeping them all would.
    expect(tablesRead('SELECT sales FROM orders', ['sales', 'orders', 'regions'])).toEqual(['sales', 'orders']);
  });

  it('when a turn has no SQL (a clarifying question), one view, or SQL that reads none of them, then all are kept', () => {
    expect(tablesRead(null, CONSIDERED)).toEqual(CONSIDERED);
    expect(tablesRead('', CONSIDERED)).toEqual(CONSIDERED);
    expect(tablesRead('SELECT * FROM regions', ['demo.sales'])).toEqual(['demo.sales']);
    expect(tablesRead('SELECT 1', CONSIDERED)).toEqual(CONSIDERED);
  });
});
