// The fleet soak's database: a PostgreSQL server instance of its own (initdb into a fresh temporary
// directory with the machine's PostgreSQL binaries, on a free 127.0.0.1 port), so that the soak can
// restart it while other work uses the machine's shared server. Durability settings (fsync,
// synchronous_commit, full_page_writes) are left at their defaults: the soak is about durability.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { appendFile, chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './service-process.js';

const run = promisify(execFile);

/** Debian's layout; SOAK_PG_BIN points elsewhere. */
const DEFAULT_PG_BIN = '/usr/lib/postgresql/15/bin';
/** initdb and postgres refuse to run as root: as root, they run as this OS user. */
const OS_USER = 'postgres';
const SUPERUSER = 'postgres';

/** How the database is stopped for a restart (pg_ctl -m). */
export type StopMode = 'fast' | 'immediate';

export interface PostgresInstance {
  port: number;
  /** A superuser connection string for `database`: setup and the audit, above row-level security. */
  superuserUrl(database: string): string;
  /**
   * A database owned by a new login that is no superuser (CREATEROLE: the migrations create the
   * service's roles), with pgvector created in it by the superuser (it is not a trusted extension).
   * Returns the login's DATABASE_URL.
   */
  createOwnedDatabase(name: string): Promise<string>;
  /** `pg_ctl stop -m <mode>` then start on the same data; resolves when it accepts connections again. */
  restart(mode: StopMode): Promise<void>;
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

export async function startPostgresInstance(options: { pgBin?: string } = {}): Promise<PostgresInstance> {
  const bin = options.pgBin ?? process.env.SOAK_PG_BIN ?? DEFAULT_PG_BIN;
  if (!existsSync(path.join(bin, 'initdb'))) {
    throw new Error(`no PostgreSQL binaries in ${bin} (initdb); set SOAK_PG_BIN to the directory of initdb and pg_ctl`);
  }
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-fleet-pg-'));
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'postgres.log');
  if (asRoot) {
    const [uid, gid] = await Promise.all(['-u', '-g'].map(async (flag) => Number((await run('id', [flag, OS_USER])).stdout.trim())));
    await chown(dir, uid!, gid!);
  }
  /** A PostgreSQL program, as the postgres OS user when this process is root. */
  const pgTool = (program: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', OS_USER, '--', path.join(bin, program), ...args]) : run(path.join(bin, program), args);

  // If this process exits without close() (an error, Ctrl-C), the instance must not outlive it.
  const removeOnExit = () => {
    const pgCtl = [path.join(bin, 'pg_ctl'), 'stop', '-D', dataDir, '-m', 'immediate'];
    if (asRoot) spawnSync('runuser', ['-u', OS_USER, '--', ...pgCtl], { stdio: 'ignore' });
    else spawnSync(pgCtl[0]!, pgCtl.slice(1), { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', removeOnExit);

  const port = await freePort();
  const pgCtl = (args: string[]) => pgTool('pg_ctl', ['-D', dataDir, ...args]);
  /** A failed pg_ctl's error, with the end of the server's log. */
  const withLog = (what: string) => async (err: Error) => {
    const log = await readFile(logFile, 'utf8').catch(() => '');
    throw new Error(`${what} failed: ${err.message}\n${log.slice(-3000)}`, { cause: err });
  };
  const start = () => pgCtl(['start', '-w', '-t', '60', '-l', logFile]).catch(withLog('pg_ctl start'));

  try {
    // Trust authentication on a loopback-only server of this run's own.
    await pgTool('initdb', ['-D', dataDir, '-U', SUPERUSER, '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8']);
    await appendFile(
      path.join(dataDir, 'postgresql.conf'),
      [
        '',
        '# memorychat fleet soak',
        "listen_addresses = '127.0.0.1'",
        `port = ${port}`,
        // TCP only: no socket file in a shared directory.
        "unix_socket_directories = ''",
        '',
      ].join('\n'),
    );
    await start();
  } catch (err) {
    process.off('exit', removeOnExit);
    removeOnExit();
    throw err;
  }

  const superuserUrl = (database: string) => `postgresql://${SUPERUSER}@127.0.0.1:${port}/${database}`;
  const asSuperuser = async (database: string, statements: string[]) => {
    const client = new pg.Client({ connectionString: superuserUrl(database) });
    await client.connect();
    try {
      for (const sql of statements) await client.query(sql);
    } finally {
      await client.end();
    }
  };

  return {
    port,
    superuserUrl,
    async createOwnedDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain identifier: ${name}`);
      await asSuperuser('postgres', [`CREATE ROLE ${name} LOGIN CREATEROLE`, `CREATE DATABASE ${name} OWNER ${name}`]);
      await asSuperuser(name, ['CREATE EXTENSION vector']);
      return `postgresql://${name}@127.0.0.1:${port}/${name}`;
    },
    async restart(mode) {
      await pgCtl(['stop', '-w', '-m', mode]).catch(withLog('pg_ctl stop'));
      await start();
    },
    async close() {
      process.off('exit', removeOnExit);
      await pgCtl(['stop', '-w', '-m', 'fast']).catch(() => pgCtl(['stop', '-m', 'immediate']).catch(() => {}));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
