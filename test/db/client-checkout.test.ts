import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withClient } from '../../services/db/client-checkout.js';
import { poolOnDroppingPostgres } from '../support/fakes/dropping-postgres.js';

/**
 * pg-pool stops listening to a client's 'error' while it is checked out, and pg emits one when the
 * connection drops mid-statement (a database restart): unheard, an uncaught exception that ends the
 * process (vitest reports it as an error of the run). The migration, the approximate indexes' upkeep,
 * an erasure's table rewrite and every scoped statement check out their client through withClient.
 */
describe('a checked-out connection that drops mid-statement', () => {
  let dropping: Awaited<ReturnType<typeof poolOnDroppingPostgres>>;

  beforeAll(async () => {
    dropping = await poolOnDroppingPostgres(1);
  });
  afterAll(() => dropping?.close());

  it('when the database drops it mid-statement, then the statement rejects, the process goes on, and the pool opens a new connection next', async () => {
    await expect(withClient(dropping.pool, (client) => client.query('SELECT 1'))).rejects.toThrow(/Connection terminated unexpectedly/);
    // An 'error' event nobody heard would surface as an uncaught exception by now.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(dropping.pool.totalCount).toBe(0);
    await expect(withClient(dropping.pool, (client) => client.query('SELECT 1'))).rejects.toThrow(/Connection terminated unexpectedly/);
    expect(dropping.server.connections).toBe(2);
  });
});
