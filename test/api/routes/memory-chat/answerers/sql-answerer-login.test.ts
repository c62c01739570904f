import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startDemoEngine } from '../../../../../services/db/demo/demo-engine.js';
import { openDatabase } from '../../../../../services/db/pool.js';
import { checkSqlLogin } from '../../../../../services/providers/answerers/sql/sql-login-check.js';
import { SERVER, SUPERUSER } from '../../../../support/databases/postgres-server.js';
import { type SqlWarehouse, startSqlWarehouse } from '../../../../support/databases/sql-warehouse.js';
import { freshTestDatabase, type TestDatabase } from '../../../../support/databases/test-database.js';
import { startFakeOpenAI } from '../../../../support/fakes/fake-llm.js';
import { sqlByQuestion } from '../../../../support/fakes/sql-llm-by-question.js';
import { startTestApp } from '../../../../support/service/test-app.js';

/** The server project provides its database server (test/support/vitest/global-setup-server.ts). */
const ON_SERVER = inject('serverDatabase') !== undefined;

/*
 * The login the LLM's SQL runs as is checked when the service starts: one that could read the
 * memory of every tenant (the memory's own login, a member of its roles, a grant on its tables, a
 * superuser) is refused with a message naming SQL_DATABASE_URL.
 */
describe('the sql answerer: the SQL login checked at start', () => {
  let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
  let warehouse: SqlWarehouse;
  /** Server: the logins a test made, dropped at the end. */
  const logins: string[] = [];
  const env = () => ({
    ANSWER_BACKEND: 'sql',
    SQL_SCHEMAS: 'demo',
    LLM_PROVIDER: 'openai',
    LLM_MODEL: 'test-model',
    OPENAI_API_KEY: 'test',
    OPENAI_BASE_URL: fake.baseURL,
  });

  beforeAll(async () => {
    fake = await startFakeOpenAI(sqlByQuestion({ regions: 'SELECT count(*) AS regions FROM demo.regions' }));
    warehouse = await startSqlWarehouse();
  });
  afterAll(async () => {
    for (const name of logins) {
      const client = new pg.Client({ ...SERVER, user: SUPERUSER, database: 'postgres' });
      await client.connect();
      await client.query(`DROP OWNED BY ${name}; DROP ROLE ${name}`).catch(() => {});
      await client.end();
    }
    await warehouse?.remove();
    await fake?.close();
  });

  it('when the login may read only the data users ask about, then the service starts and answers', async () => {
    const t = await startTestApp({ ...env(), ...warehouse.env });
    try {
      const reply = await t.request('POST', '/memoryChat', { token: t.token('alice'), body: { question: 'how many regions?' } });
      expect(reply.status).toBe(200);
      expect(reply.body.execution_result['Row 1']).toEqual([{ columnName: 'regions', value: '4' }]);
    } finally {
      await t.close();
    }
  }, 120_000);

  it.runIf(!ON_SERVER)(
    "when the check runs as the demo engine's superuser login instead of its reader role, then it is refused",
    async () => {
      const engine = await startDemoEngine({ waitMs: 10_000 });
      const dataDir = await freshTestDatabase();
      const memory = await openDatabase({ DATA_DIR: dataDir.env.DATA_DIR!, DATABASE_POOL_MAX: 1 });
      const client = await engine.connect();
      const rss = (await readFile(`/proc/${engine.pid()}/status`, 'utf8')).match(/VmRSS:\s+(\d+) kB/)![1];
      console.log(`the demo engine's process (a second PGlite, in memory, without pgvector): RSS ${Math.round(Number(rss) / 1024)} MB`);
      try {
        await expect(checkSqlLogin(client, undefined, memory.pool)).rejects.toThrow(/^SQL_DATABASE_URL: .*superuser postgres/);
        await expect(checkSqlLogin(client, engine.role, memory.pool)).resolves.toBeUndefined();
      } finally {
        client.release();
        await memory.close();
        await engine.close();
        await dataDir.remove();
      }
    },
    120_000,
  );

  describe.runIf(ON_SERVER)('on a server', () => {
    const superuser = async <T>(run: (client: pg.Client) => Promise<T>, database = 'postgres') => {
      const client = new pg.Client({ ...SERVER, user: SUPERUSER, database });
      await client.connect();
      try {
        return await run(client);
      } finally {
        await client.end();
      }
    };
    /** A login of the test's own on the warehouse, given `grant` first (run as the superuser in the memory database). */
    const login = async (grant: (name: string) => string, memoryDatabase?: string) => {
      const name = `sqllogin_${randomBytes(4).toString('hex')}`;
      logins.push(name);
      const warehouseDb = new URL(warehouse.env.SQL_DATABASE_URL).pathname.slice(1);
      await superuser((c) => c.query(`CREATE ROLE ${name} LOGIN; GRANT CONNECT ON DATABASE ${warehouseDb} TO ${name}`));
      const sql = grant(name);
      if (sql) await superuser((c) => c.query(sql), memoryDatabase);
      return `postgres://${name}@${SERVER.host}:${SERVER.port}/${warehouseDb}`;
    };

    /** Starting the service with SQL_DATABASE_URL at `url` on a memory database of its own: the error it refuses with. */
    const refusal = async (url: string | ((memory: TestDatabase) => Promise<string>)) => {
      const memory = await freshTestDatabase();
      const sqlUrl = typeof url === 'string' ? url : await url(memory);
      const started = startTestApp({ ...env(), SQL_DATABASE_URL: sqlUrl }, { testDatabase: memory });
      const outcome = await started.then(
        async (t) => {
          await t.close();
          return undefined;
        },
        (err: Error) => err,
      );
      await memory.remove().catch(() => {});
      return outcome;
    };

    it("when SQL_DATABASE_URL is the memory database's own login, then the service refuses to start and names SQL_DATABASE_URL", async () => {
      const err = await refusal(warehouse.ownerUrl!);
      expect(err?.message).toMatch(/^SQL_DATABASE_URL: its role \S+ \(the login\) is or may become memorychat's role/);
    });

    it("when the login may SET ROLE to memorychat's roles, then the service refuses to start", async () => {
      for (const role of ['memorychat_app', 'memorychat_maintenance']) {
        const err = await refusal(await login((name) => `GRANT ${role} TO ${name}`));
        expect(err?.message, role).toMatch(new RegExp(`^SQL_DATABASE_URL: .*memorychat's role ${role}`));
      }
    });

    it("when the login may read one of memorychat's tables, then the service refuses to start and names the table", async () => {
      const err = await refusal(async (memory) =>
        login((name) => `GRANT SELECT (question) ON public.turns TO ${name}`, new URL(memory.env.DATABASE_URL!).pathname.slice(1)),
      );
      expect(err?.message).toMatch(/^SQL_DATABASE_URL: .*may read memorychat's tables \(turns\)/);
    });

    it('when the login is a superuser, or may become one, then the service refuses to start', async () => {
      const direct = await refusal(`postgres://${SUPERUSER}@${SERVER.host}:${SERVER.port}/postgres`);
      expect(direct?.message).toMatch(/^SQL_DATABASE_URL: .*superuser postgres/);
      const member = await refusal(await login((name) => `GRANT ${SUPERUSER} TO ${name}`));
      expect(member?.message).toMatch(/^SQL_DATABASE_URL: .*superuser postgres or may become it/);
    });
  });
});
