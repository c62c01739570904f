import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../../services/db/migrate.js';
import { type CitusNode, startCitusCluster } from '../databases/citus-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The `citus` project's cluster: its coordinator and its workers (test/support/databases/citus-cluster.ts). */
    citusCluster: { coordinator: CitusNode; workers: CitusNode[] };
  }
}

/**
 * For the `citus` project: the server project's set-up (a login that is no superuser, CREATEROLE only,
 * and a migrated template database each test file copies) on a Citus cluster of the run's own. The
 * login and the template database exist on every node, the template with citus and pgvector created
 * and the workers registered, so a copy made on each node (test/support/databases/test-database.ts) is a
 * distributed database of its own: its shards are in the workers' copies.
 */
export default async function setup(project: TestProject) {
  const cluster = await startCitusCluster();
  const login = `mc_test_${randomBytes(4).toString('hex')}`;
  const template = `${login}_template`;
  try {
    await cluster.createLogin(login, 'LOGIN CREATEROLE');
    await cluster.createDatabase(template, login);
    const pool = new pg.Pool({ ...cluster.coordinator, user: login, database: template, max: 1 });
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
    // A database that is a template must have no connection: Citus's maintenance daemon keeps one to
    // each database with the extension. Connections refused, then the daemon's ended, it stays away.
    for (const node of [cluster.coordinator, ...cluster.workers]) {
      await cluster.asSuperuser(node, 'postgres', async (c) => {
        await c.query(`ALTER DATABASE ${template} WITH ALLOW_CONNECTIONS false`);
        await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [template]);
      });
    }
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  project.provide('serverDatabase', { login, template, host: cluster.coordinator.host, port: cluster.coordinator.port });
  project.provide('citusCluster', { coordinator: cluster.coordinator, workers: cluster.workers });
  return async () => {
    await cluster.stop();
  };
}
