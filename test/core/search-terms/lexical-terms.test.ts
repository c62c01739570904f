import { describe, expect, it } from 'vitest';
import { lexicalTerms, questionSearch, turnSearchTerms } from '../../../services/core/search-terms/lexical-terms.js';
import { sqlIdentifiers } from '../../../services/core/search-terms/sql-identifiers.js';

describe('SQL identifiers', () => {
  it('when SQL joins aliased tables, then the tables and columns are found and the aliases and values are not', () => {
    expect(
      sqlIdentifiers(
        'SELECT T1.Name, count(*) AS n FROM country AS T1 JOIN countrylanguage T2 ON T1.Code = T2.CountryCode WHERE T2.Language = "English"',
      ),
    ).toEqual({ tables: ['country', 'countrylanguage'], columns: ['name', 'code', 'countrycode', 'language'] });
  });

  it('when tables are listed with commas or qualified with a database, then each table is found by its own name', () => {
    expect(sqlIdentifiers('SELECT x FROM "sales_db"."orders" o, public.customers WHERE o.id = 1').tables).toEqual(['orders', 'customers']);
  });
});

describe('lexical terms', () => {
  it('when words differ only in their endings, then they give the same term', () => {
    expect(lexicalTerms('singers')).toEqual(lexicalTerms('singer'));
    expect(lexicalTerms('car_makers CarMakers')).toEqual(['car', 'maker', 'car', 'maker']);
  });

  it('when text is written without spaces, then it gives overlapping character pairs', () => {
    expect(lexicalTerms('有多少位歌手')).toEqual(['有多', '多少', '少位', '位歌', '歌手']);
    expect(lexicalTerms('売上データ2024')).toEqual(['売上', '上デ', 'デー', 'ータ', '2024']);
  });

  it('when a turn is stored, then its tables weigh most, then its columns, then its question, and its whole table names and the terms version weigh least', () => {
    expect(turnSearchTerms({ question: 'Oldest singer?', sqlQuery: 'SELECT name FROM singer ORDER BY age', tablesUsed: [] })).toBe(
      "'singe':1A,5C 'name':2B 'age':3B 'oldes':4C 'table:singer':6D 'terms:3':7D",
    );
  });

  it('when tables share the start of their names, then their whole names still tell them apart', () => {
    const terms = turnSearchTerms({
      question: 'Languages per country',
      sqlQuery: 'SELECT * FROM country JOIN countrylanguage ON code = countrycode',
      tablesUsed: ['Country'],
    });
    expect(terms).toBe("'count':1A,2A,4B,7C 'code':3B 'langu':5C 'per':6C 'table:country':8D 'table:countrylanguage':9D 'terms:3':10D");
  });

  it('when tables_used are the views an answerer’s search considered, then the terms hold the tables its SQL read, by their own names', () => {
    const terms = turnSearchTerms({
      question: 'Sales in 2024',
      sqlQuery: 'SELECT * FROM "sales_db"."sales" WHERE "year" = 2024',
      tablesUsed: ['hr_db.employees', 'sales_db.sales'],
    });
    // No term of hr_db.employees, nor of the database's name: one table, one whole name.
    expect(terms).toBe("'sales':1A,2C 'in':3C '2024':4C 'table:sales':5D 'terms:3':6D");
  });

  it('when a turn names very long or very many tables, then its terms stay within what a tsvector holds', () => {
    const terms = turnSearchTerms({
      question: 'q',
      sqlQuery: `SELECT 1 FROM "${'x'.repeat(3000)}"`,
      tablesUsed: Array.from({ length: 5000 }, (_, i) => `${'t'.repeat(100)}${i}`),
    });
    const lexemes = [...terms.matchAll(/'((?:[^']|'')*)':/g)].map((m) => m[1]!);
    expect(Math.max(...lexemes.map((l) => Buffer.byteLength(l)))).toBeLessThanOrEqual(2047);
    expect(lexemes.filter((l) => l.startsWith('table:'))).toHaveLength(100);
    expect(lexemes).toContain(`table:${'x'.repeat(128)}`);
  });

  it('when a question has quotes or no words, then its query stays a safe literal or is absent', () => {
    expect(questionSearch("it's")).toEqual({ query: "'it'", terms: ['it'] });
    expect(questionSearch('?!')).toBeNull();
  });
});
