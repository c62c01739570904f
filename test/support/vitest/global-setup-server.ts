import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../../services/db/migrate.js';
import { SERVER, SUPERUSER } from '../databases/postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The `server` project's login and its migrated template database (test/support/databases/test-database.ts);
     * the `citus` project's, with its coordinator's address (the server project's is SERVER).
     */
    serverDatabase: { login: string; template: string; host?: string; port?: number };
  }
}

/**
 * For the `server` project: a login that is no superuser (CREATEROLE only, so that migration 005 can
 * make and grant the memorychat roles, as README says) and a database it owns, migrated once as that
 * login; each test file gets a copy of it (CREATE DATABASE ... TEMPLATE: a fraction of a second).
 * pgvector's control file is not `trusted`, so the superuser creates the extension first, as a DBA
 * does once on a real server (docs/row-level-security.md); the migration's CREATE EXTENSION IF NOT
 * EXISTS then finds it.
 */
export default async function setup(project: TestProject) {
  const login = `mc_test_${randomBytes(4).toString('hex')}`;
  const template = `${login}_template`;
  const admin = new pg.Pool({ ...SERVER, user: SUPERUSER, database: 'postgres', max: 1 });
  const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'`).catch((err: Error) => {
    throw new Error(`the server tests need PostgreSQL at ${SERVER.host}:${SERVER.port} with trust auth (README): ${err.message}`);
  });
  if (rows[0].n === 0)
    throw new Error(`the PostgreSQL server at ${SERVER.host}:${SERVER.port} has no pgvector: run sudo scripts/install-pgvector.sh`);

  async function teardown() {
    // Every database of the login: the template and any a crashed test file left behind.
    const { rows } = await admin.query<{ datname: string }>(
      'SELECT datname FROM pg_database WHERE datdba = (SELECT oid FROM pg_roles WHERE rolname = $1)',
      [login],
    );
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
    await admin.query(`DROP ROLE IF EXISTS ${login}`);
    await admin.end();
  }

  try {
    await admin.query(`CREATE ROLE ${login} LOGIN CREATEROLE`);
    await admin.query(`CREATE DATABASE ${template} OWNER ${login}`);
    const templateAdmin = new pg.Pool({ ...SERVER, user: SUPERUSER, database: template, max: 1 });
    const pool = new pg.Pool({ ...SERVER, user: login, database: template, max: 1 });
    try {
      await templateAdmin.query('CREATE EXTENSION vector');
      await migrate(pool);
    } finally {
      await pool.end();
      await templateAdmin.end();
    }
  } catch (err) {
    await teardown();
    throw err;
  }
  project.provide('serverDatabase', { login, template });
  return teardown;
}
