import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tablesOf } from '../../../../services/core/context/table-links.js';
import { tablesOfTerms, turnSearchTerms } from '../../../../services/core/search-terms/lexical-terms.js';
import { type Database, openDatabase } from '../../../../services/db/pool.js';
import { freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';

/**
 * The rerank reads a candidate's tables from the whole-name terms the retrieval statement sends
 * (tsvector_to_array of its weight-D terms) instead of parsing its SQL: both must give the same set.
 */
describe("a similar turn's tables, read from its stored terms", () => {
  let testDatabase: TestDatabase;
  let database: Database;

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    database = await openDatabase({ ...testDatabase.env, DATABASE_POOL_MAX: 1 });
  });
  afterAll(async () => {
    await database?.close();
    await testDatabase?.remove();
  });

  const turns = [
    { sql_query: 'SELECT T1.Name FROM people AS T1 JOIN poker_player AS T2 ON T1.People_ID = T2.People_ID', tables_used: [] },
    { sql_query: 'SELECT x FROM "sales_db"."orders" o, public.customers WHERE o.id = 1', tables_used: ['Orders', 'returns'] },
    { sql_query: null, tables_used: ['Country'] },
    { sql_query: "SELECT count(*) FROM airports WHERE city = 'Aberdeen'", tables_used: [] },
  ];

  it('when the statement sends the terms Postgres stored for a turn, then they name the tables its SQL and stored tables name', async () => {
    for (const turn of turns) {
      const terms = turnSearchTerms({ question: 'Which ones?', sqlQuery: turn.sql_query, tablesUsed: turn.tables_used });
      const { rows } = await database.pool.query<{ lexemes: string[] }>(
        "SELECT tsvector_to_array(ts_filter($1::tsvector, '{d}')) AS lexemes",
        [terms],
      );
      const fromTerms = tablesOf({ ...turn, table_terms: rows[0]!.lexemes });
      expect(fromTerms).toEqual(tablesOf(turn));
      expect(fromTerms.length).toBeGreaterThan(0);
    }
  });

  it('when the terms were written by another terms version, then the tables come from the SQL', () => {
    expect(tablesOfTerms(['table:flights', 'terms:1'])).toBeUndefined();
    const turn = { sql_query: 'SELECT * FROM airports', tables_used: [], table_terms: ['table:flights', 'terms:1'] };
    expect(tablesOf(turn)).toEqual(['airports']);
    expect(tablesOf({ ...turn, table_terms: null })).toEqual(['airports']);
  });
});
