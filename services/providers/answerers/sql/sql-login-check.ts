import pg from 'pg';

/** A connection to the memory database above row-level security (db/pool.ts's pool). */
type MemoryDatabase = Pick<pg.Pool, 'query'>;

/** The roles memorychat's migrations create; the login of DATABASE_URL and the tables' owner are added at the check. */
const MEMORYCHAT_ROLES = ['memorychat_app', 'memorychat_maintenance'];

/** The SQL login could reach memorychat's own data: the service does not start (the message names the variable). */
export class SqlLoginError extends Error {
  override name = 'SqlLoginError';
}

/**
 * Refuses an SQL_DATABASE_URL login the LLM's SQL could use against memorychat itself: a superuser
 * (or a member of one), and, when it is a role of the memory database's own cluster, a member of
 * memorychat's roles, of DATABASE_URL's login or of the tables' owner (it could SET ROLE to them from
 * inside a query), or one that may read any of memorychat's tables. `role` is the role the
 * statements take (the demo's reader); `sql` is a connection of SQL_DATABASE_URL, `memory` one of
 * DATABASE_URL above row-level security.
 */
export async function checkSqlLogin(sql: pg.ClientBase, role: string | undefined, memory: MemoryDatabase): Promise<void> {
  await sql.query('BEGIN READ ONLY');
  try {
    if (role) await sql.query(`SET LOCAL ROLE ${pg.escapeIdentifier(role)}`);
    const { rows } = await sql.query<{ login: string; superuser: string | null; started: string; port: string }>(
      `SELECT current_user AS login,
              (SELECT min(s.rolname) FROM pg_roles s WHERE s.rolsuper AND pg_has_role(current_user, s.oid, 'MEMBER')) AS superuser,
              pg_postmaster_start_time()::text AS started, current_setting('port') AS port`,
    );
    const found = rows[0]!;
    const who = `its role ${found.login}${role ? '' : ' (the login)'}`;
    if (found.superuser) {
      throw new SqlLoginError(
        `SQL_DATABASE_URL: ${who} is the superuser ${found.superuser} or may become it; the LLM's SQL could do anything. Use a login that may only read the data users ask about (README: the SQL login)`,
      );
    }
    const here = await memory.query<{ started: string; port: string; login: string; owner: string | null }>(
      `SELECT pg_postmaster_start_time()::text AS started, current_setting('port') AS port, current_user AS login,
              (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = to_regclass('public.turns')) AS owner`,
    );
    const memoryCluster = here.rows[0]!;
    // Another cluster: its roles are not memorychat's, whatever their names.
    if (memoryCluster.started !== found.started || memoryCluster.port !== found.port) return;

    const roles = [...new Set([...MEMORYCHAT_ROLES, memoryCluster.login, ...(memoryCluster.owner ? [memoryCluster.owner] : [])])];
    const reach = await memory.query<{ roles: string[] | null; tables: string[] | null }>(
      `SELECT (SELECT array_agg(r.rolname::text ORDER BY r.rolname) FROM pg_roles r
                WHERE r.rolname = ANY($2::text[]) AND pg_has_role($1, r.oid, 'MEMBER')) AS roles,
              (SELECT array_agg(c.relname::text ORDER BY c.relname) FROM pg_class c
                WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
                  AND has_any_column_privilege($1, c.oid, 'SELECT')) AS tables`,
      [found.login, roles],
    );
    const { roles: memberOf, tables } = reach.rows[0]!;
    if (memberOf?.length) {
      throw new SqlLoginError(
        `SQL_DATABASE_URL: ${who} is or may become memorychat's role ${memberOf.join(', ')}, so the LLM's SQL could read every tenant's memory. Use a login of its own that may only read the data users ask about (README: the SQL login)`,
      );
    }
    if (tables?.length) {
      throw new SqlLoginError(
        `SQL_DATABASE_URL: ${who} may read memorychat's tables (${tables.join(', ')}), so the LLM's SQL could read every tenant's memory. Revoke it, or use a login of its own (README: the SQL login)`,
      );
    }
  } finally {
    await sql.query('ROLLBACK');
  }
}

/** checkSqlLogin on a connection of its own: SQL_DATABASE_URL's, or the demo's engine as its reader role. */
export async function checkConfiguredSqlLogin(
  config: { SQL_DATABASE_URL?: string },
  memory: MemoryDatabase,
  demoEngine?: { role: string; connect(): Promise<pg.PoolClient> },
): Promise<void> {
  if (demoEngine) {
    const client = await demoEngine.connect();
    try {
      return await checkSqlLogin(client, demoEngine.role, memory);
    } finally {
      client.release();
    }
  }
  const client = new pg.Client({ connectionString: config.SQL_DATABASE_URL });
  // Dropped mid-check, the statement rejects (the start fails with its message); unheard, the 'error'
  // event pg also emits would end the process with a stack trace instead.
  client.on('error', () => {});
  await client.connect().catch((err: Error) => {
    throw new SqlLoginError(`SQL_DATABASE_URL: could not connect to check its login: ${err.message}`);
  });
  try {
    await checkSqlLogin(client, undefined, memory);
  } finally {
    await client.end();
  }
}
