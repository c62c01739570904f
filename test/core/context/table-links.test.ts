import { describe, expect, it } from 'vitest';
import {
  type LinkCandidate,
  learnSchema,
  linkedTables,
  names,
  questionStems,
  rerankByTableLinks,
  tablesOf,
} from '../../../services/core/context/table-links.js';

const turn = (sql: string, score: number): LinkCandidate => ({ sql_query: sql, tables_used: [], score });

describe('the similar turns cut to k by the tables the question points to', () => {
  it('when a question names tables in plural or inside a longer name, then its stems name them', () => {
    const stems = questionStems('What are the languages spoken in the countries with pets?');
    expect(stems).toEqual(expect.arrayContaining(['langu', 'count', 'pet']));
    expect(names(stems, 'countrylanguage')).toBe(true);
    expect(names(stems, 'has_pet')).toBe(true);
    expect(names(stems, 'airports')).toBe(false);
  });

  it('when a question is written without spaces, then it gives no stems, so no table is named by it', () => {
    expect(questionStems('有多少位歌手？')).toEqual([]);
  });

  it("when a statement reads a column through a table's alias or compares it with a literal, then the schema gives both to that table", () => {
    const schema = learnSchema([
      "SELECT T1.Name FROM people AS T1 JOIN poker_player AS T2 ON T1.People_ID = T2.People_ID WHERE T1.Nationality = 'Russia'",
      'SELECT count(*) FROM airports WHERE city = "Aberdeen"',
      'SELECT name FROM airlines JOIN flights ON uid = airline',
    ]);
    expect([...schema.get('people')!.identifiers]).toEqual(expect.arrayContaining(['people', 'name', 'people_id', 'nationality']));
    expect([...schema.get('people')!.values]).toEqual(['russia']);
    expect([...schema.get('airports')!.identifiers]).toEqual(expect.arrayContaining(['airports', 'city']));
    expect([...schema.get('airports')!.identifiers]).not.toContain('count');
    expect([...schema.get('airports')!.values]).toEqual(['aberdeen']);
    // Two tables and unqualified columns: whose `name` it is the statement does not say.
    expect([...schema.get('airlines')!.identifiers]).toEqual(['airlines']);
  });

  it('when a word is a column or a value seen with a table, then the question points to that table without naming it', () => {
    const schema = learnSchema([
      'SELECT T1.Name FROM people AS T1 JOIN poker_player AS T2 ON T1.People_ID = T2.People_ID',
      "SELECT count(*) FROM airports WHERE city = 'Aberdeen'",
    ]);
    expect(linkedTables('What are the names of all poker players?', schema)).toEqual(new Set(['people', 'poker_player']));
    expect(linkedTables('Which ones are in Aberdeen?', schema)).toEqual(new Set(['airports']));
    expect(linkedTables('有多少位歌手？', schema)).toEqual(new Set());
  });

  it('when the best-scored turn reads a table no word points to, then a turn whose tables all are pointed to comes first', () => {
    const events = turn('SELECT count(*) FROM poker_player AS T1 JOIN events AS T2 ON T1.Event_ID = T2.Event_ID', 0.032);
    const names = turn('SELECT T1.Name FROM people AS T1 JOIN poker_player AS T2 ON T1.People_ID = T2.People_ID', 0.03);
    const heights = turn('SELECT Height FROM people', 0.031);
    // "names" points to people (people.Name), "poker" and "players" to poker_player; no word to events.
    expect(rerankByTableLinks('What are the names of all poker players?', [events, heights, names], 3)).toEqual([heights, names, events]);
    const flights = turn('SELECT * FROM flights', 0.032);
    const aberdeen = turn(
      "SELECT * FROM flights AS T1 JOIN airports AS T2 ON T1.DestAirport = T2.AirportCode WHERE T2.City = 'Aberdeen'",
      0.03,
    );
    const airlines = turn('SELECT * FROM airlines', 0.031);
    expect(rerankByTableLinks('Which flights arrive in Aberdeen?', [flights, airlines, aberdeen], 2)).toEqual([flights, aberdeen]);
  });

  it('when statements name their tables with a schema, then the schema learned and the turns read name them alike', () => {
    const customers = turn("SELECT c.name FROM public.customers c WHERE c.city = 'Oslo'", 0.031);
    const orders = turn('SELECT * FROM public.orders', 0.032);
    expect(tablesOf(customers)).toEqual(['customers']);
    const schema = learnSchema([customers.sql_query, orders.sql_query]);
    expect([...schema.keys()].sort()).toEqual(['customers', 'orders']);
    expect([...schema.get('customers')!.identifiers]).toEqual(expect.arrayContaining(['customers', 'name', 'city']));
    expect(rerankByTableLinks('Names of the customers in Oslo?', [orders, customers], 1)).toEqual([customers]);
  });

  it('when a turn’s tables_used are qualified views its search only considered, then its tables are those its SQL read, by their own names', () => {
    const sales = { ...turn('SELECT * FROM "sales_db"."sales"', 0.03), tables_used: ['hr_db.employees', 'sales_db.sales'] };
    expect(tablesOf(sales)).toEqual(['sales']);
    const asked = { ...turn('', 0.03), sql_query: null, tables_used: ['sales_db.sales', '"hr_db"."employees"'] };
    expect(tablesOf(asked)).toEqual(['employees', 'sales']);
  });

  it('when no word of the question points to any table, then the k are the best of each set of tables first, in the fused score order', () => {
    const a1 = turn('SELECT * FROM singer', 0.032);
    const a2 = turn('SELECT name FROM singer', 0.031);
    const b = turn('SELECT * FROM concert', 0.03);
    expect(rerankByTableLinks('有多少位歌手？', [a1, a2, b], 2)).toEqual([a1, b]);
    expect(rerankByTableLinks('有多少位歌手？', [a1, a2, b], 3)).toEqual([a1, a2, b]);
  });

  it('when a turn reads a table the question does not point to, then it goes after one that reads only pointed-to tables, unless it is the same question asked before', () => {
    const both = turn('SELECT * FROM flights JOIN airports ON DestAirport = AirportCode', 0.032);
    const airports = turn('SELECT * FROM airports', 0.031);
    expect(rerankByTableLinks('What are all the airports?', [both, airports], 2)).toEqual([airports, both]);
    const repeat = { ...both, score: 1.032 };
    expect(rerankByTableLinks('What are all the airports?', [repeat, airports], 2)).toEqual([repeat, airports]);
  });
});
