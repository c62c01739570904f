// `npm run soak`: load with restarts, then reconciliation (docs/soak.md). Options (flags, or env):
//   --clients N          concurrent clients, each its own user and conversation (SOAK_CLIENTS, default 200)
//   --seconds S          how long clients start new requests (SOAK_SECONDS, default 90)
//   --restart KIND       db | service | both | none (SOAK_RESTART, default both)
//   --drain-seconds S    how long unacknowledged requests keep retrying afterwards (SOAK_DRAIN_SECONDS, default 90)
//   --answer-ms MIN-MAX  the fake upstream's delay range (SOAK_ANSWER_MS, default 50-300)
//   --attempt-timeout-ms N  a client gives up waiting and retries (SOAK_ATTEMPT_TIMEOUT_MS, default 10000)
//   --resend-rate R      share of acknowledged requests sent again to check the replay (SOAK_RESEND_RATE, default 0.05)
//   --service-log FILE   append the service processes' output (their JSON log) to FILE
//   --log-level LEVEL    the service's LOG_LEVEL (SOAK_LOG_LEVEL, default warn)
//   --seed N             workload and delays (SOAK_SEED, default: random, printed)
// Exits 1 when a turn was lost, duplicated, misplaced or stored without an acknowledgement.
import { parseArgs } from 'node:util';
import { formatSoakReport, runSoak, type RestartKind } from './soak.js';

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
  },
});

const restart = args.restart as RestartKind;
if (!['db', 'service', 'both', 'none'].includes(restart)) throw new Error(`--restart: db, service, both or none (got ${restart})`);
const [answerMinMs, answerMaxMs] = args['answer-ms']!.split('-').map(Number);
const log = (message: string) => console.error(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}`);
log(`seed ${args.seed}`);

const report = await runSoak({
  clients: Number(args.clients),
  durationMs: Number(args.seconds) * 1000,
  restart,
  answerMinMs: answerMinMs!,
  answerMaxMs: answerMaxMs ?? answerMinMs!,
  drainMs: Number(args['drain-seconds']) * 1000,
  attemptTimeoutMs: Number(args['attempt-timeout-ms']),
  resendRate: Number(args['resend-rate']),
  serviceLog: args['service-log'],
  serviceLogLevel: args['log-level'],
  seed: Number(args.seed),
  log,
});
console.log(`${formatSoakReport(report)}\n  seed=${args.seed}`);
const broken =
  report.lost + report.duplicated + report.misplaced + report.unacknowledgedStored + report.inconsistentSessions + report.resentDifferent;
process.exit(broken === 0 && report.finalExit.code === 0 ? 0 : 1);
