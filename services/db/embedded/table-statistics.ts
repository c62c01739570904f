import type pg from 'pg';

/**
 * The embedded database's stand-in for autovacuum's ANALYZE. PGlite runs Postgres in one process
 * without the autovacuum launcher (its `autovacuum` setting reads on, but no worker ever starts), so
 * the service's tables were never analyzed: with no statistics the planner read a session's turns
 * through a scan of all its user's turns (docs/performance.md, "A user's own history"). Every `intervalMs`, and once at the start, each
 * table of the service's schema that holds rows but no statistics (CREATE INDEX and VACUUM set a
 * table's row count, so that count does not tell), or that has grown by a tenth of its pages
 * (autovacuum's default fraction) since its pages were last counted, is analyzed. The check reads only the catalog.
 */
export function keepTableStatistics(pool: pg.Pool, intervalMs = 30_000): { stop(): void } {
  let pass: Promise<void> = Promise.resolve();
  const run = () => {
    // A pass that fails (the database stopping) is simply tried again at the next tick.
    pass = pass
      .then(() => analyzeGrownTables(pool))
      .then(
        () => {},
        () => {},
      );
  };
  run();
  const timer = setInterval(run, intervalMs).unref();
  return {
    stop() {
      clearInterval(timer);
    },
  };
}

/** ANALYZEs the grown tables; returns their names. */
export async function analyzeGrownTables(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT format('%I', c.relname) AS name FROM pg_class c
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
       AND pg_relation_size(c.oid) > 0
       AND (NOT EXISTS (SELECT FROM pg_statistic s WHERE s.starelid = c.oid)
            OR pg_relation_size(c.oid) / current_setting('block_size')::int > c.relpages * 1.1 + 1)
     ORDER BY c.relname`,
  );
  for (const { name } of rows) await pool.query(`ANALYZE ${name}`);
  return rows.map((r) => r.name);
}
