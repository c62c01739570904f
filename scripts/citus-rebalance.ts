// `npm run citus:rebalance`: moves shards onto a Citus cluster's workers (after citus_add_node), with
// writes going on, as the tables' owner of DATABASE_URL (the coordinator): services/db/citus-rebalance.ts
// says why the tables' FORCE ROW LEVEL SECURITY is lifted while it runs (docs/scaling.md#rebalancing).
import pg from 'pg';
import { rebalanceCitus } from '../services/db/citus-rebalance.js';

const url = process.env.DATABASE_URL;
if (!url) {
  console.error('citus:rebalance: set DATABASE_URL to the coordinator (the login that owns the tables, or a superuser)');
  process.exit(1);
}
const pool = new pg.Pool({ connectionString: url, max: 1 });
const started = Date.now();
try {
  await rebalanceCitus(pool);
  console.log(`rebalanced in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (err) {
  console.error(`citus:rebalance: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  await pool.end();
}
