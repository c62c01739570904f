// A Citus cluster of the test run's own: a coordinator and two workers, each a PostgreSQL instance
// (initdb into a temporary directory with the machine's PostgreSQL 15 binaries, its own 127.0.0.1
// port, shared_preload_libraries='citus', trust authentication on loopback only), with citus and
// pgvector created in every database it makes. scripts/install-citus.sh installs the extension.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { appendFile, chown, cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

const PG_BIN = process.env.CITUS_PG_BIN ?? '/usr/lib/postgresql/15/bin';
/** initdb and postgres refuse to run as root: as root, they run as this OS user. */
const OS_USER = 'postgres';
export const CITUS_SUPERUSER = 'postgres';
export const CITUS_HOST = '127.0.0.1';
/**
 * Shards per distributed table. Citus's default of 32 makes each table's creation (every test file
 * migrates a database of its own) and every multi-shard statement slower on two cores; 8 still spreads
 * users over both workers and leaves shards for a rebalance to move to a third.
 */
const SHARD_COUNT = 8;

export interface CitusNode {
  host: string;
  port: number;
}

export interface CitusCluster {
  coordinator: CitusNode;
  workers: CitusNode[];
  /**
   * A database named `name` on every node, owned by `owner` (a login made with `createLogin`), with
   * citus and pgvector created by the superuser (neither is a trusted extension) and the workers
   * registered in its metadata: Citus keeps its metadata per database.
   */
  createDatabase(name: string, owner: string): Promise<void>;
  dropDatabase(name: string): Promise<void>;
  /** A login on every node: roles are per server, and Citus opens worker connections as the current role. */
  createLogin(name: string, attributes: string): Promise<void>;
  dropLogin(name: string): Promise<void>;
  /** Starts one more worker, not yet added to any database's metadata (the rebalance test adds it). */
  startWorker(): Promise<CitusNode>;
  /** Superuser statements on one node's database. */
  asSuperuser<T>(node: CitusNode, database: string, work: (client: pg.Client) => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

interface Instance {
  name: string;
  logFile: string;
  node: CitusNode;
  stop(): Promise<void>;
  stopNow(): void;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, CITUS_HOST, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function startInstance(dir: string, name: string): Promise<Instance> {
  const asRoot = process.getuid?.() === 0;
  const home = path.join(dir, name);
  const dataDir = path.join(home, 'data');
  const logFile = path.join(home, 'postgres.log');
  await mkdir(home);
  if (asRoot) {
    const [uid, gid] = await Promise.all(['-u', '-g'].map(async (flag) => Number((await run('id', [flag, OS_USER])).stdout.trim())));
    // The run's directory (mode 0700) too, or the server cannot reach its own.
    await chown(dir, uid!, gid!);
    await chown(home, uid!, gid!);
  }
  const pgTool = (program: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', OS_USER, '--', path.join(PG_BIN, program), ...args]) : run(path.join(PG_BIN, program), args);
  const port = await freePort();
  await pgTool('initdb', ['-D', dataDir, '-U', CITUS_SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8']);
  await appendFile(
    path.join(dataDir, 'postgresql.conf'),
    [
      '',
      "listen_addresses = '127.0.0.1'",
      `port = ${port}`,
      "unix_socket_directories = ''",
      // pgvector too: Citus creates the nearest-turns functions on the workers over connections that
      // have not loaded it yet, and a login that is no superuser may not SET an ivfflat.* setting then.
      "shared_preload_libraries = 'citus,vector'",
      // The nodes talk over loopback without TLS (Citus's default asks for it).
      "citus.node_conninfo = 'sslmode=disable'",
      `citus.shard_count = ${SHARD_COUNT}`,
      // Shard moves (a rebalance) copy a shard and follow its writes by logical replication.
      'wal_level = logical',
      // Multi-shard writes (an erase, retention cleanup) commit with two-phase commit.
      'max_prepared_transactions = 100',
      'max_connections = 300',
      'shared_buffers = 64MB',
      // A test cluster: durability is not what it is for. But a commit is acknowledged only once its
      // WAL is written (synchronous_commit on; with fsync off that is a write, not a flush): a shard
      // move catches up to the source's WAL write position (Citus's multi_logical_replication.c,
      // pg_current_wal_lsn()), so a write acknowledged while its commit record was still in WAL
      // buffers could miss the move and be lost with the old placement (docs/scaling.md#rebalancing).
      'fsync = off',
      'synchronous_commit = on',
      'full_page_writes = off',
      '',
    ].join('\n'),
  );
  try {
    await pgTool('pg_ctl', ['-D', dataDir, 'start', '-w', '-t', '60', '-l', logFile]);
  } catch (err) {
    const log = await readFile(logFile, 'utf8').catch(() => '');
    throw new Error(`starting the Citus ${name} failed: ${(err as Error).message}\n${log.slice(-3000)}`, { cause: err });
  }
  const pgCtlStop = (mode: string) => [path.join(PG_BIN, 'pg_ctl'), '-D', dataDir, 'stop', '-w', '-m', mode];
  return {
    name,
    logFile,
    node: { host: CITUS_HOST, port },
    async stop() {
      const [cmd, ...args] = pgCtlStop('fast');
      await (asRoot ? run('runuser', ['-u', OS_USER, '--', cmd!, ...args]) : run(cmd!, args)).catch(() => {});
    },
    stopNow() {
      const [cmd, ...args] = pgCtlStop('immediate');
      if (asRoot) spawnSync('runuser', ['-u', OS_USER, '--', cmd!, ...args], { stdio: 'ignore' });
      else spawnSync(cmd!, args, { stdio: 'ignore' });
    },
  };
}

/** Starts a coordinator and two workers; throws, naming the fix, when Citus is not installed. */
export async function startCitusCluster(): Promise<CitusCluster> {
  if (!existsSync(path.join(PG_BIN, 'initdb'))) throw new Error(`no PostgreSQL binaries in ${PG_BIN}; set CITUS_PG_BIN`);
  const { stdout: libdir } = await run(path.join(PG_BIN, 'pg_config'), ['--pkglibdir']);
  if (!existsSync(path.join(libdir.trim(), 'citus.so'))) {
    throw new Error('the citus project needs the Citus extension in the machine PostgreSQL: run sudo scripts/install-citus.sh');
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-citus-'));
  const instances: Instance[] = [];
  // If this process exits without stop() (an error, Ctrl-C), the servers must not outlive it.
  const stopOnExit = () => {
    for (const instance of instances) instance.stopNow();
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stopOnExit);

  const asSuperuser = async <T>(node: CitusNode, database: string, work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ ...node, user: CITUS_SUPERUSER, database });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };

  try {
    instances.push(...(await Promise.all(['coordinator', 'worker-1', 'worker-2'].map((name) => startInstance(dir, name)))));
  } catch (err) {
    process.off('exit', stopOnExit);
    stopOnExit();
    throw err;
  }
  const coordinator = instances[0]!.node;
  const workers = instances.slice(1).map((i) => i.node);
  const allNodes = () => instances.map((i) => i.node);
  const ident = (name: string) => {
    if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain identifier: ${name}`);
    return name;
  };

  return {
    coordinator,
    workers,
    async createDatabase(name, owner) {
      await Promise.all(
        allNodes().map(async (node) => {
          await asSuperuser(node, 'postgres', (c) => c.query(`CREATE DATABASE ${ident(name)} OWNER ${ident(owner)}`));
          // Migration 001's CREATE EXTENSION IF NOT EXISTS vector is sent on to the workers by Citus,
          // where only the extension's owner may run it: the login owns pgvector, as if it had created
          // it (docs/scaling.md says what an operator does instead).
          await asSuperuser(node, name, async (c) => {
            await c.query('CREATE EXTENSION citus; CREATE EXTENSION vector');
            await c.query(`UPDATE pg_extension SET extowner = $1::regrole WHERE extname = 'vector'`, [owner]);
          });
        }),
      );
      await asSuperuser(coordinator, name, async (c) => {
        await c.query('SELECT citus_set_coordinator_host($1, $2)', [coordinator.host, coordinator.port]);
        for (const worker of workers) await c.query('SELECT citus_add_node($1, $2)', [worker.host, worker.port]);
      });
    },
    async dropDatabase(name) {
      await Promise.all(
        allNodes().map((node) => asSuperuser(node, 'postgres', (c) => c.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`))),
      );
    },
    async createLogin(name, attributes) {
      await Promise.all(
        allNodes().map((node) => asSuperuser(node, 'postgres', (c) => c.query(`CREATE ROLE ${ident(name)} ${attributes}`))),
      );
    },
    async dropLogin(name) {
      await Promise.all(allNodes().map((node) => asSuperuser(node, 'postgres', (c) => c.query(`DROP ROLE IF EXISTS ${ident(name)}`))));
    },
    async startWorker() {
      const instance = await startInstance(dir, `worker-${instances.length}`);
      instances.push(instance);
      return instance.node;
    },
    asSuperuser,
    async stop() {
      process.off('exit', stopOnExit);
      await Promise.all(instances.map((i) => i.stop()));
      // CITUS_LOG_DIR keeps each node's server log, to read what a failed test's statements met.
      const keep = process.env.CITUS_LOG_DIR;
      if (keep) {
        await mkdir(keep, { recursive: true });
        for (const instance of instances) await cp(instance.logFile, path.join(keep, `${instance.name}.log`)).catch(() => {});
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
