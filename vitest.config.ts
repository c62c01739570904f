import { configDefaults, defineConfig } from 'vitest/config';
import CitusApartSequencer from './test/support/vitest/sequencer.js';

// Tests of pure code: no database, no Redis, no global setup (`npm run test:unit`, a few seconds).
const UNIT = [
  'test/core/**/*.test.ts',
  'test/config/**/*.test.ts',
  'test/providers/**/*.test.ts',
  'test/db/sql.test.ts',
  'test/db/client-checkout.test.ts',
  'test/architecture/**/*.test.ts',
  'test/eval/similar-rerank.test.ts',
];
// Files that read this process's memory (its RSS, with the service in process) and bound its growth:
// each runs in a fresh process, in a project of its own that isolates (`embedded-own-process`,
// `server-own-process`). In a process that ran other files before, RSS already holds the heap they
// grew: the byte-bounds file measured +2 to +5 MB there where a fresh process shows +29 to +35 MB.
const OWN_PROCESS = ['test/api/app/fuzz.test.ts', 'test/api/routes/memory-chat/answerers/sql-answerer-byte-bounds.test.ts'];
// Global setups: a migrated embedded template, or a login and template database on the PostgreSQL
// server; and the build of dist/. A project runs its own, so an -own-process project makes its template again.
const EMBEDDED_SETUP = ['test/support/vitest/global-setup.ts', 'test/support/vitest/build-setup.ts'];
const SERVER_SETUP = ['test/support/vitest/global-setup-server.ts', 'test/support/vitest/build-setup.ts'];
// The chat bots of examples/ against local fakes of Slack and Telegram and the service on the embedded database.
const EXAMPLES = ['test/examples/**/*.test.ts'];
// The `citus` project's files: the server project's tests of what is stored, and the cluster's own.
const CITUS = [
  'test/citus/**/*.test.ts',
  'test/api/plugins/auth/isolation-property.test.ts',
  'test/api/routes/memory-chat/memory-chat.test.ts',
  'test/api/routes/memory-chat/memory.test.ts',
  'test/api/routes/memory-chat/dedup.test.ts',
  'test/api/routes/admin-verified-pairs/verified-pairs.test.ts',
  'test/api/routes/turns/turns.test.ts',
  'test/api/routes/sessions/sessions.test.ts',
  'test/api/routes/gdpr/gdpr.test.ts',
  'test/api/routes/gdpr/gdpr-large-export.test.ts',
  'test/api/routes/gdpr/erase-barrier.test.ts',
  'test/api/routes/gdpr/erase-stalls-no-one.test.ts',
  'test/api/plugins/idempotency/idempotency.test.ts',
  'test/api/routes/sessions/retention.test.ts',
  'test/api/routes/admin-audit/access-audit.test.ts',
  'test/api/routes/admin-api-keys/api-keys.test.ts',
  'test/api/routes/account-link/account-linking.test.ts',
  'test/worker/cleanup.test.ts',
  'test/worker/re-embedding.test.ts',
  'test/db/ann-index-upkeep/ann-index-upkeep.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Each file starts its own embedded Postgres process; two cores run two files at a time (all projects share them).
    maxWorkers: 2,
    // A worker process runs one file after another and keeps the modules it imported: importing the
    // service again in a fresh process for each file was 500 of the suite's 3,400 worker-seconds. Each
    // file still makes its own app, database and fakes; the services' module state is caches keyed by
    // their content or by tenant and user (docs/development.md, "One process, many files"). OWN_PROCESS
    // files are the exception.
    isolate: false,
    // Keeps the Citus isolation property away from the large export (why: the sequencer's comment).
    sequence: { sequencer: CitusApartSequencer },
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: UNIT },
      },
      {
        extends: true,
        test: {
          name: 'embedded',
          include: ['test/**/*.test.ts'],
          exclude: [
            ...configDefaults.exclude,
            ...UNIT,
            ...EXAMPLES,
            // About a server login that is no superuser; the embedded database's login is one.
            'test/db/row-security/row-level-security-server.test.ts',
            'test/browser/**',
            // About a Citus cluster: the citus project runs them.
            'test/citus/**',
            // The bench's 1M-turn seeder, for servers: it stores ~9.6k turn texts first, which the
            // embedded database parses for most of a minute.
            'test/db/bench-bulk-seed.test.ts',
            ...OWN_PROCESS,
          ],
          globalSetup: EMBEDDED_SETUP,
        },
      },
      {
        extends: true,
        test: {
          name: 'embedded-own-process',
          include: OWN_PROCESS,
          isolate: true,
          globalSetup: EMBEDDED_SETUP,
        },
      },
      {
        // Their own project, so that CI's closing line counts them apart (`npm run test:examples`).
        extends: true,
        test: {
          name: 'examples',
          include: EXAMPLES,
          globalSetup: EMBEDDED_SETUP,
        },
      },
      {
        // The playground in Debian's chromium (playwright-core), on the embedded database.
        extends: true,
        test: { name: 'browser', include: ['test/browser/**/*.test.ts'], globalSetup: ['test/support/vitest/global-setup.ts'] },
      },
      {
        // The same service tests on the PostgreSQL server at 127.0.0.1:5432 (test/support/databases/test-database.ts).
        extends: true,
        test: {
          name: 'server',
          include: ['test/api/**/*.test.ts', 'test/worker/**/*.test.ts', 'test/db/**/*.test.ts'],
          exclude: [
            ...configDefaults.exclude,
            ...UNIT,
            // Runs on the PostgreSQL server in the embedded project already, in databases of its own.
            'test/db/migrations.test.ts',
            // Local mode: an embedded DATA_DIR holds the database and the signing secret.
            'test/api/server/server-start.test.ts',
            // Restarts its database, which the shared server must not be.
            'test/api/server/soak.test.ts',
            // Starts a Postgres of its own, without pgvector: the same in both projects.
            'test/api/server/database-without-pgvector.test.ts',
            // Starts a PostgreSQL server of its own (and restarts it): the same in both projects.
            'test/api/server/fleet-soak.test.ts',
            // About the embedded database's files and its single owner process.
            'test/api/routes/gdpr/erase-leaves-no-trace.test.ts',
            'test/worker/embedded-with-redis.test.ts',
            'test/db/embedded/embedded-connection-handover.test.ts',
            'test/db/demo/demo-engine-start.test.ts',
            'test/db/embedded/cluster-template.test.ts',
            'test/db/embedded/table-statistics.test.ts',
            'test/db/embedded/shared-buffers.test.ts',
            // About Redis (a cluster of its own): the embedded project runs it.
            'test/worker/redis-cluster.test.ts',
            ...OWN_PROCESS,
          ],
          globalSetup: SERVER_SETUP,
        },
      },
      {
        extends: true,
        test: {
          name: 'server-own-process',
          include: OWN_PROCESS,
          isolate: true,
          globalSetup: SERVER_SETUP,
        },
      },
      {
        // The server project's database tests on a Citus cluster of the run's own (a coordinator and
        // two workers, test/support/vitest/global-setup-citus.ts), and the Citus-only tests of test/citus.
        // Left out, with why: docs/scaling.md#the-test-suite-on-citus.
        extends: true,
        test: {
          name: 'citus',
          include: [...CITUS],
          // After every other project, two files at a time, the cluster's load beside none of theirs: beside
          // its isolation property the embedded soak's restarts acknowledged 84 requests of the more than
          // 90 it needs. (maxWorkers: 1 makes vitest run the files alone: 2,381 s for stop 34's CI.)
          sequence: { groupOrder: 1 },
          globalSetup: ['test/support/vitest/global-setup-citus.ts', 'test/support/vitest/build-setup.ts'],
        },
      },
    ],
  },
});
