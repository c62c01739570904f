import pgvector from 'pgvector';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../services/db/pool.js';
import { vectorParam } from '../../services/db/vector-param.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { freshTestDatabase, type TestDatabase } from '../support/databases/test-database.js';

describe('vectors as binary bind parameters (db/vector-param.ts)', () => {
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

  it('when a vector is sent in binary, then Postgres holds exactly the vector its text form gives', async () => {
    const vectors = [
      embedText('How many singers are older than 30?', 384)!,
      [0, 1, -1, 1e-38, 3.4e38, -2.5e-7, 0.1, 1 / 3],
      Array.from({ length: 1536 }, (_, i) => Math.sin(i) * 10 ** ((i % 9) - 4)),
    ];
    for (const v of vectors) {
      const { rows } = await database.pool.query<{ same: boolean; binary: string; text: string }>(
        'SELECT $1::vector = $2::vector AS same, $1::vector::text AS binary, $2::vector::text AS text',
        [vectorParam(v), pgvector.toSql(v)],
      );
      expect(rows[0]!.same).toBe(true);
      expect(rows[0]!.binary).toBe(rows[0]!.text);
    }
  });

  it('when a vector holds a value pgvector refuses, then the binary form is refused as the text form is', async () => {
    for (const bad of [
      [1, Number.NaN],
      [Number.POSITIVE_INFINITY, 0],
    ]) {
      await expect(database.pool.query('SELECT $1::vector', [vectorParam(bad)])).rejects.toThrow(/NaN|infinite/i);
      await expect(database.pool.query('SELECT $1::vector', [pgvector.toSql(bad)])).rejects.toThrow();
    }
  });
});
