// `npm run soak`: load with restarts, then reconciliation (docs/soak.md). Options (flags, or env):
//   --fleet              the fleet: 2 APIs and 2 workers on a PostgreSQL server of the run's own and
//                        Redis, SIGKILL of an API and of a worker, a database restart (SOAK_FLEET=1)
//   --clients N          concurrent clients, each its own user and conversation (SOAK_CLIENTS, default 200)
//   --seconds S          how long clients start new requests (SOAK_SECONDS, default 90)
//   --restart KIND       db | service | both | none (SOAK_RESTART, default both; not with --fleet)
//   --drain-seconds S    how long unacknowledged requests keep retrying afterwards (SOAK_DRAIN_SECONDS, default 90)
//   --answer-ms MIN-MAX  the fake upstream's delay range (SOAK_ANSWER_MS, default 50-300)
//   --attempt-timeout-ms N  a client gives up waiting and retries (SOAK_ATTEMPT_TIMEOUT_MS, default 10000)
//   --resend-rate R      share of acknowledged requests sent again to check the replay (SOAK_RESEND_RATE, default 0.05)
//   --service-log FILE   append the service processes' output (their JSON log) to FILE
//   --log-level LEVEL    the service's LOG_LEVEL (SOAK_LOG_LEVEL, default warn)
//   --seed N             workload and delays (SOAK_SEED, default: random, printed)
// With --fleet also:
//   --export-rate R      share of acknowledged requests followed by a GDPR export request (SOAK_EXPORT_RATE, default 0.03)
//   --job-wait-seconds S how long background jobs may take after the clients are done (SOAK_JOB_WAIT_SECONDS, default 60)
//   --db-stop MODE       pg_ctl stop mode of the database restart: immediate | fast (SOAK_DB_STOP, default immediate)
//   --redis-url URL      the Redis the fleet shares, under a prefix of its own (SOAK_REDIS_URL, default redis://127.0.0.1:6379)
// Exits 1 when a turn was lost, duplicated, misplaced or stored without an acknowledgement (and, for
// the fleet, when a job was lost or a key was refused with 409 for more than 30 s after the kill).
import { parseArgs } from 'node:util';
import { formatFleetReport, MAX_409_AFTER_KILL_MS, runFleetSoak } from './fleet.js';
import type { StopMode } from './postgres-instance.js';
import { formatSoakReport, type RestartKind, runSoak, type SoakFigures } from './soak.js';

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string', default: process.env.SOAK_CLIENTS ?? '200' },
    seconds: { type: 'string', default: process.env.SOAK_SECONDS ?? '90' },
    restart: { type: 'string', default: process.env.SOAK_RESTART ?? 'both' },
    'drain-seconds': { type: 'string', default: process.env.SOAK_DRAIN_SECONDS ?? '90' },
    'answer-ms': { type: 'string', default: process.env.SOAK_ANSWER_MS ?? '50-300' },
    'attempt-timeout-ms': { type: 'string', default: process.env.SOAK_ATTEMPT_TIMEOUT_MS ?? '10000' },
    'resend-rate': { type: 'string', default: process.env.SOAK_RESEND_RATE ?? '0.05' },
    'service-log': { type: 'string' },
    'log-level': { type: 'string', default: process.env.SOAK_LOG_LEVEL ?? 'warn' },
    seed: { type: 'string', default: process.env.SOAK_SEED ?? String(Math.floor(Math.random() * 2 ** 31)) },
    fleet: { type: 'boolean', default: process.env.SOAK_FLEET === '1' },
    'export-rate': { type: 'string', default: process.env.SOAK_EXPORT_RATE ?? '0.03' },
    'job-wait-seconds': { type: 'string', default: process.env.SOAK_JOB_WAIT_SECONDS ?? '60' },
    'db-stop': { type: 'string', default: process.env.SOAK_DB_STOP ?? 'immediate' },
    'redis-url': { type: 'string', default: process.env.SOAK_REDIS_URL ?? 'redis://127.0.0.1:6379' },
  },
});

const restart = args.restart as RestartKind;
if (!['db', 'service', 'both', 'none'].includes(restart)) throw new Error(`--restart: db, service, both or none (got ${restart})`);
const dbStop = args['db-stop'] as StopMode;
if (!['immediate', 'fast'].includes(dbStop)) throw new Error(`--db-stop: immediate or fast (got ${dbStop})`);
const [answerMinMs, answerMaxMs] = args['answer-ms']!.split('-').map(Number);
const log = (message: string) => console.error(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}`);
log(`seed ${args.seed}`);
// Ctrl-C: exit through process.exit, so that the fleet's database instance is stopped and removed.
process.once('SIGINT', () => process.exit(130));

const common = {
  clients: Number(args.clients),
  durationMs: Number(args.seconds) * 1000,
  answerMinMs: answerMinMs!,
  answerMaxMs: answerMaxMs ?? answerMinMs!,
  drainMs: Number(args['drain-seconds']) * 1000,
  attemptTimeoutMs: Number(args['attempt-timeout-ms']),
  resendRate: Number(args['resend-rate']),
  serviceLog: args['service-log'],
  serviceLogLevel: args['log-level'],
  seed: Number(args.seed),
  log,
};
const storedBroken = (r: SoakFigures) =>
  r.lost + r.duplicated + r.misplaced + r.unacknowledgedStored + r.inconsistentSessions + r.resentDifferent > 0;

if (args.fleet) {
  const report = await runFleetSoak({
    ...common,
    llmMinMs: 100,
    llmMaxMs: 600,
    exportRate: Number(args['export-rate']),
    jobWaitMs: Number(args['job-wait-seconds']) * 1000,
    dbStopMode: dbStop,
    redisUrl: args['redis-url']!,
  });
  console.log(`${formatFleetReport(report)}\n  seed=${args.seed}`);
  const ok =
    !storedBroken(report) &&
    report.jobs.jobsLost === 0 &&
    report.longest409AfterKillMs <= MAX_409_AFTER_KILL_MS &&
    report.finalExits.every((f) => f.exit.code === 0);
  process.exit(ok ? 0 : 1);
} else {
  const report = await runSoak({ ...common, restart });
  console.log(`${formatSoakReport(report)}\n  seed=${args.seed}`);
  process.exit(!storedBroken(report) && report.finalExit.code === 0 ? 0 : 1);
}
