/** The machine's PostgreSQL server (README: trust auth, pgvector from scripts/install-pgvector.sh). */
export const SERVER = { host: '127.0.0.1', port: 5432 };
/** Creates the test logins and databases, and creates pgvector, which is not a trusted extension. */
export const SUPERUSER = 'postgres';
