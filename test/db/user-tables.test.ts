import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USER_COLUMNS, USER_TABLES } from '../../services/db/user-tables.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

/** The tables of the migrated schema with a column that names a user. */
async function tablesWithUserColumns(db: pg.Pool): Promise<string[]> {
  const { rows } = await db.query<{ table_name: string }>(
    `SELECT DISTINCT c.table_name FROM information_schema.columns c
     JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
     WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.column_name = ANY($1)
     ORDER BY 1`,
    [USER_COLUMNS],
  );
  return rows.map((row) => row.table_name);
}

const unlisted = (tables: string[]) => tables.filter((table) => !Object.hasOwn(USER_TABLES, table));

describe('the one list of the tables that hold users (services/db/user-tables.ts)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('when the migrated schema is read, then every table with a column naming a user is listed for erasure and retention, and every listed table exists', async () => {
    const found = await tablesWithUserColumns(t.admin);
    expect(unlisted(found)).toEqual([]);
    expect(Object.keys(USER_TABLES).filter((table) => !found.includes(table))).toEqual([]);
  });

  it('when a new table with a user column is in neither erasure nor retention, then the check names it', async () => {
    await t.admin.query('CREATE TABLE user_notes (tenant_id text NOT NULL, user_id text NOT NULL, note text)');
    try {
      expect(unlisted(await tablesWithUserColumns(t.admin))).toEqual(['user_notes']);
    } finally {
      await t.admin.query('DROP TABLE user_notes');
    }
  });
});
