import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverSqlDatabase } from '../../../../services/providers/answerers/sql/sql-database.js';
import { createFairQueue } from '../../../../services/providers/answerers/sql/sql-fair-queue.js';
import { poolOnDroppingPostgres } from '../../../support/fakes/dropping-postgres.js';

/**
 * Ending a question's statement opens a connection of its own for pg_terminate_backend. When that
 * connection drops mid-statement (the server restarting), pg rejects the statement and also emits
 * 'error' on its client: unheard, that event is an uncaught exception that ends the service's process
 * (vitest reports it as an error of the run).
 */
describe('the SQL answerer: ending a statement when the server drops the connection', () => {
  let dropping: Awaited<ReturnType<typeof poolOnDroppingPostgres>>;

  beforeAll(async () => {
    dropping = await poolOnDroppingPostgres(2);
  });
  afterAll(() => dropping?.close());

  it('when the terminate’s own connection drops mid-statement, then cancel rejects, the question’s connection is closed, and the process goes on', async () => {
    const database = serverSqlDatabase(dropping.pool, { queue: createFairQueue(2, 1_000), schemas: ['public'], statementTimeoutMs: 1_000 });
    const question = await database.connect();
    // As the answerer's transaction does (sql-database.ts): the question's connection is closed below.
    question.on('error', () => {});
    const closed = new Promise<void>((resolve) =>
      (question as unknown as { connection: { stream: NodeJS.EventEmitter } }).connection.stream.once('close', () => resolve()),
    );
    await expect(database.cancel(question)).rejects.toThrow(/Connection terminated unexpectedly/);
    await closed;
    expect(dropping.server.connections).toBe(2);
    question.release(new Error('ended'));
    // An 'error' event nobody heard would surface as an uncaught exception by now.
    await new Promise((resolve) => setTimeout(resolve, 50));
  });
});
