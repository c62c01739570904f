import type pg from 'pg';

/**
 * Empties every table but the migrations ledgers (through the test's own superuser connection), so
 * each property run starts from a service with no data: a run's outcome then depends on its program
 * alone, which is what shrinking and replaying a counterexample assume.
 */
export async function emptyAllTables(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables
     WHERE schemaname = current_schema() AND tablename NOT IN ('schema_migrations', 'migrations')`,
  );
  if (rows.length) await pool.query(`TRUNCATE ${rows.map((r) => r.name).join(', ')}`);
}
