// The fleet soak (docs/soak.md, "The fleet"): 2 API processes and 2 workers on a PostgreSQL server
// of the run's own and the shared Redis, N clients with Idempotency-Keys and retries spread over the
// two APIs; mid-run one API process and one worker are killed with SIGKILL (and started again) and
// the database is restarted. Then the stored turns are reconciled against the acknowledged requests,
// and the background jobs the clients caused (summaries, GDPR exports) against what completed.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { QUEUE_NAME } from '../../services/core/job-queue.js';
import { migrate } from '../../services/db/migrate.js';
import { auditJobs, awaitJobs, type JobAudit } from './fleet-jobs.js';
import { createFailoverClient, createHttpClient, type HttpClient } from './http-client.js';
import { type StopMode, startPostgresInstance } from './postgres-instance.js';
import { readStoredTurns, reconcile } from './reconcile.js';
import { type ProcessExit, type ServiceProcess, startServiceProcess } from './service-process.js';
import { startSlowAnswerer } from './slow-answerer.js';
import { startSlowLlm } from './slow-llm.js';
import { formatFigures, JWT_SECRET, newTally, type SoakFigures, soakFigures, startSoakClients, TENANT } from './soak.js';
import type { ExportRequest, LogicalRequest } from './soak-client.js';

export interface FleetOptions {
  clients: number;
  durationMs: number;
  /** The upstream answerer's delay range. */
  answerMinMs: number;
  answerMaxMs: number;
  /** The summary LLM's delay range: long enough that a killed worker has summaries in flight. */
  llmMinMs: number;
  llmMaxMs: number;
  /** After the duration, how long unacknowledged requests keep retrying before they count as unfinished. */
  drainMs: number;
  /** After the clients are done, how long background jobs may take before unfinished ones count as lost. */
  jobWaitMs: number;
  attemptTimeoutMs: number;
  resendRate: number;
  /** The share of acknowledged requests a client follows with a GDPR export request. */
  exportRate: number;
  /** How the database is stopped for its restart. */
  dbStopMode: StopMode;
  seed: number;
  redisUrl: string;
  /** Appends every process's output (their JSON logs) to this file. */
  serviceLog?: string;
  serviceLogLevel?: string;
  log: (message: string) => void;
}

export type FleetEventKind = 'kill-api' | 'kill-worker' | 'restart-db';

export interface FleetEvent {
  kind: FleetEventKind;
  atMs: number;
  /** From the kill (or stop) to the replacement being ready. */
  downMs: number;
  /** A killed process's exit (signal SIGKILL). */
  exit?: ProcessExit;
  /** The jobs the killed worker was running when it died. */
  jobsRunning?: number;
}

/** The jobs the killed worker was running: BullMQ finds them stalled once their lock expires and runs them again. */
export interface OrphanedJobs {
  count: number;
  /** Of those, completed by the end (a completed job pruned from Redis counts as completed). */
  completed: number;
  /** From the kill to the last of them completing. */
  completedAfterMs: number;
}

export interface FleetReport extends SoakFigures {
  events: FleetEvent[];
  /** The exits of the processes stopped (SIGTERM) at the end: all must be 0. */
  finalExits: { name: string; exit: ProcessExit }[];
  jobs: JobAudit & { waitedMs: number };
  orphanedJobs: OrphanedJobs;
  /** Keys with an attempt in flight on the killed API process when it died. */
  keysOrphanedByKill: number;
  /** Of those, keys later answered `409 idempotency-in-progress`. */
  keysRefusedAfterKill: number;
  /** The longest time from the API kill to such a key's last 409 (0 when none). */
  longest409AfterKillMs: number;
}

/** Issue 10's bound: no key is refused with 409 for longer than this after the process holding it died. */
export const MAX_409_AFTER_KILL_MS = 30_000;

/** Low, so that sessions get summarized several times in a run (MEMORY_MAX_HISTORY_MESSAGES below it: a job folds 4 turns). */
const SUMMARIZATION_THRESHOLD = 6;
const KEPT_VERBATIM = 2;
/** A worker is killed once this many jobs run (both workers share them), or after WAIT_FOR_ACTIVE_MS. */
const ACTIVE_JOBS_AT_KILL = 3;
const WAIT_FOR_ACTIVE_MS = 10_000;
/** A killed process is started again after this (plus its start-up). */
const RESTART_AFTER_MS = 2_000;
const START_ATTEMPTS = 5;
/** When the kills and the database restart happen, as shares of the run. */
const PLAN: { kind: FleetEventKind; at: number }[] = [
  { kind: 'kill-api', at: 0.25 },
  { kind: 'kill-worker', at: 0.45 },
  { kind: 'restart-db', at: 0.65 },
];

export async function runFleetSoak(o: FleetOptions): Promise<FleetReport> {
  const runId = `${o.seed.toString(36)}${randomBytes(3).toString('hex')}`;
  const queuePrefix = `mcfleet-${runId}`;
  const cleanups: (() => Promise<unknown>)[] = [];
  const processes: Slot[] = [];
  const http: HttpClient[] = [];
  try {
    const answerer = await startSlowAnswerer({ minMs: o.answerMinMs, maxMs: o.answerMaxMs, seed: o.seed });
    cleanups.push(() => answerer.close());
    const llm = await startSlowLlm({ minMs: o.llmMinMs, maxMs: o.llmMaxMs, seed: o.seed + 1 });
    cleanups.push(() => llm.close());
    const postgres = await startPostgresInstance();
    cleanups.push(() => postgres.close());
    const database = 'memorychat_fleet';
    const databaseUrl = await postgres.createOwnedDatabase(database);
    const migrator = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    await migrate(migrator).finally(() => migrator.end());
    const redis = new Redis(o.redisUrl, { maxRetriesPerRequest: 1 });
    cleanups.push(async () => {
      await deleteKeysUnder(redis, queuePrefix);
      redis.disconnect();
    });
    // On the shared connection, which BullMQ leaves open on close.
    const queue = new Queue(QUEUE_NAME, { connection: redis, prefix: queuePrefix });
    cleanups.push(() => queue.close());
    const admin = new pg.Pool({ connectionString: postgres.superuserUrl(database), max: 2 });
    admin.on('error', () => {}); // an idle connection dropped by the database restart
    cleanups.push(() => admin.end());

    const env = {
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_MAX: '10',
      REDIS_URL: o.redisUrl,
      QUEUE_PREFIX: queuePrefix,
      JWT_SECRET,
      ANSWER_URL: answerer.url,
      ANSWER_AUTH: 'none',
      // The fakes answer within 0.6 s; IDEMPOTENCY_CLAIM_LEASE stays at its default, as deployed.
      ANSWER_TIMEOUT_MS: '5000',
      LLM_TIMEOUT_MS: '1000',
      SUMMARY_PROVIDER: 'openai',
      SUMMARY_MODEL: 'soak-summary',
      OPENAI_API_KEY: 'soak',
      OPENAI_BASE_URL: llm.baseUrl,
      MEMORY_SUMMARIZATION_THRESHOLD: String(SUMMARIZATION_THRESHOLD),
      MEMORY_MAX_HISTORY_MESSAGES: String(KEPT_VERBATIM),
      RATE_LIMIT_PER_MINUTE: '0',
      LOG_LEVEL: o.serviceLogLevel ?? 'warn',
    };
    const start = (name: string, program: 'api' | 'worker') => {
      const slot = new Slot(name, program, env, o);
      processes.push(slot);
      return slot.start();
    };
    const [api0, api1] = await Promise.all([start('api-0', 'api'), start('api-1', 'api')]);
    await Promise.all([start('worker-0', 'worker'), start('worker-1', 'worker')]);
    const apiSlot = processes[0]!;
    const workerSlots = processes.slice(2);
    http.push(createHttpClient(api0.baseUrl, o.clients), createHttpClient(api1.baseUrl, o.clients));
    o.log(
      `APIs ${api0.baseUrl} ${api1.baseUrl}, 2 workers, PostgreSQL on port ${postgres.port}, Redis prefix ${queuePrefix}; ` +
        `${o.clients} clients for ${o.durationMs / 1000} s`,
    );

    const tally = newTally();
    const { started, clients } = startSoakClients(o, runId, (i) => createFailoverClient(http, i % http.length), tally);

    const events: FleetEvent[] = [];
    let apiKill: { at: number; origin: string } | undefined;
    let workerKill: { at: number; orphans: string[] } | undefined;
    // A killed process is started again in the background, as an orchestrator would: the plan goes on meanwhile.
    const replacements: Promise<void>[] = [];
    for (const { kind, at } of PLAN) {
      await new Promise((r) => setTimeout(r, Math.max(0, started + at * o.durationMs - Date.now())));
      const event: FleetEvent = { kind, atMs: Date.now() - started, downMs: 0 };
      events.push(event);
      const back = () => {
        event.downMs = Date.now() - (started + event.atMs);
        o.log(
          `${kind} at ${(event.atMs / 1000).toFixed(1)} s: back after ${event.downMs} ms${event.jobsRunning !== undefined ? ` (the worker was running ${event.jobsRunning} jobs)` : ''}`,
        );
      };
      if (kind === 'restart-db') {
        await postgres.restart(o.dbStopMode);
        back();
      } else {
        const busiest = kind === 'kill-worker' ? await busiestWorkerSoon(queue, workerSlots) : undefined;
        const slot = busiest?.slot ?? apiSlot;
        const victimName = slot.workerName();
        const killAt = Date.now();
        event.atMs = killAt - started;
        if (kind === 'kill-api') apiKill = { at: killAt, origin: slot.current!.baseUrl };
        event.exit = await slot.kill();
        if (busiest) {
          // Those it was still running when it died: a job it finished meanwhile is no orphan.
          const orphans = await stillActiveUnder(queue, busiest.jobIds, victimName);
          workerKill = { at: killAt, orphans };
          event.jobsRunning = orphans.length;
        }
        const replacement = (async () => {
          await new Promise((r) => setTimeout(r, RESTART_AFTER_MS));
          await slot.start();
          back();
        })();
        // Awaited after the clients; handled now so that a failed start does not end the process first.
        replacement.catch(() => {});
        replacements.push(replacement);
      }
    }

    const results = await Promise.all(clients);
    await Promise.all(replacements);
    const requests: LogicalRequest[] = results.flatMap((c) => c.requests);
    const exports: ExportRequest[] = results.flatMap((c) => c.exports);
    const finishedMs = Date.now() - started;
    o.log(`clients done after ${(finishedMs / 1000).toFixed(1)} s; waiting for background jobs (at most ${o.jobWaitMs / 1000} s)`);
    const jobs = await awaitJobs(
      () => auditJobs({ db: admin, queue, tenantId: TENANT, exports, summarizationThreshold: SUMMARIZATION_THRESHOLD }),
      o.jobWaitMs,
    );
    const finalExits = [];
    for (const slot of processes) finalExits.push({ name: slot.name, exit: await slot.stop() });

    const { turns, sessions } = await readStoredTurns(postgres.superuserUrl(database), TENANT);
    const figures = soakFigures(o, requests, tally, reconcile(requests, turns, sessions), finishedMs);
    return {
      ...figures,
      events,
      finalExits,
      jobs,
      orphanedJobs: await orphanOutcome(queue, workerKill),
      ...refusalsAfterKill(requests, apiKill),
    };
  } finally {
    await Promise.all(processes.map((slot) => slot.stop()));
    await Promise.all(http.map((client) => client.close()));
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => o.log(`cleanup failed: ${(err as Error).message}`));
  }
}

/**
 * The worker to kill: the first seen running ACTIVE_JOBS_AT_KILL jobs, or after WAIT_FOR_ACTIVE_MS
 * the one running the most (BullMQ records the worker's name on each job it takes).
 */
async function busiestWorkerSoon(queue: Queue, workers: Slot[]): Promise<{ slot: Slot; jobIds: string[] }> {
  const deadline = Date.now() + WAIT_FOR_ACTIVE_MS;
  for (;;) {
    const active = await queue.getJobs(['active']);
    const held = workers.map((slot) => ({
      slot,
      jobIds: active.flatMap((job) => (job && job.processedBy === slot.workerName() ? [job.id!] : [])),
    }));
    const busiest = held.reduce((a, b) => (b.jobIds.length > a.jobIds.length ? b : a));
    if (busiest.jobIds.length >= ACTIVE_JOBS_AT_KILL || Date.now() >= deadline) return busiest;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stillActiveUnder(queue: Queue, jobIds: string[], workerName: string): Promise<string[]> {
  const jobs = await Promise.all(jobIds.map((id) => Job.fromId(queue, id)));
  const states = await Promise.all(jobs.map((job) => job?.getState()));
  return jobs.flatMap((job, i) => (job && states[i] === 'active' && job.processedBy === workerName ? [job.id!] : []));
}

/** Whether the killed worker's jobs were run again to completion, and when the last one completed. */
async function orphanOutcome(queue: Queue, kill: { at: number; orphans: string[] } | undefined): Promise<OrphanedJobs> {
  if (!kill) return { count: 0, completed: 0, completedAfterMs: 0 };
  let completed = 0;
  let last = kill.at;
  for (const id of kill.orphans) {
    const job = await Job.fromId(queue, id);
    // Pruned from Redis: only completed jobs are (removeOnComplete); failed ones are kept.
    if (!job) completed++;
    else if ((await job.getState()) === 'completed') {
      completed++;
      last = Math.max(last, job.finishedOn ?? last);
    }
  }
  return { count: kill.orphans.length, completed, completedAfterMs: last - kill.at };
}

/**
 * The keys the killed API process held: those with an attempt in flight on it when it died. For
 * each one later refused with 409, the time from the kill to its last 409.
 */
function refusalsAfterKill(requests: LogicalRequest[], kill: { at: number; origin: string } | undefined) {
  if (!kill) return { keysOrphanedByKill: 0, keysRefusedAfterKill: 0, longest409AfterKillMs: 0 };
  const orphaned = requests.filter((r) => r.dropped.some((d) => d.origin === kill.origin && d.sentAt <= kill.at && d.failedAt >= kill.at));
  const refused = orphaned.filter((r) => r.lastConflictAt !== undefined && r.lastConflictAt > kill.at);
  return {
    keysOrphanedByKill: orphaned.length,
    keysRefusedAfterKill: refused.length,
    longest409AfterKillMs: Math.max(0, ...refused.map((r) => r.lastConflictAt! - kill.at)),
  };
}

/** One API or worker of the fleet: started, killed and started again on the same port, stopped. */
class Slot {
  current: ServiceProcess | undefined;
  private port: number | undefined;

  constructor(
    readonly name: string,
    private readonly program: 'api' | 'worker',
    private readonly env: Record<string, string>,
    private readonly o: Pick<FleetOptions, 'serviceLog' | 'log'>,
  ) {}

  /** The name BullMQ records on the jobs a worker takes (services/worker/bull-worker.ts). */
  workerName(): string {
    return `${hostname()}:${this.current?.pid}`;
  }

  /** Starts the process; one that exits while starting (e.g. while the database restarts) is started again, as k8s would. */
  async start(): Promise<ServiceProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.current = await startServiceProcess(this.env, { program: this.program, port: this.port, logFile: this.o.serviceLog });
        this.port = this.current.port;
        return this.current;
      } catch (err) {
        if (attempt >= START_ATTEMPTS) throw err;
        this.o.log(`${this.name} failed to start (attempt ${attempt}), starting it again: ${(err as Error).message.split('\n')[0]}`);
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  async kill(): Promise<ProcessExit> {
    const running = this.current;
    this.current = undefined;
    return running ? running.kill() : { code: null, signal: null };
  }

  async stop(): Promise<ProcessExit> {
    const running = this.current;
    this.current = undefined;
    if (!running) return { code: null, signal: null };
    const exit = await running.stop(70_000);
    if (exit.code !== 0) {
      const fatal = running
        .output()
        .split('\n')
        .filter((line) => /"level":(50|60)|closing/.test(line));
      this.o.log(`${this.name} exited with ${exit.code ?? exit.signal}; its last errors:\n${fatal.slice(-5).join('\n')}`);
    }
    return exit;
  }
}

async function deleteKeysUnder(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/** The headline and the figures, as `npm run soak -- --fleet` prints them. */
export function formatFleetReport(r: FleetReport): string {
  const events = r.events
    .map(
      (e) =>
        `${e.kind}@${(e.atMs / 1000).toFixed(1)}s(back after ${e.downMs} ms${e.jobsRunning !== undefined ? `, ${e.jobsRunning} jobs running` : ''})`,
    )
    .join(' ');
  const j = r.jobs;
  return [
    `fleet: requests=${r.requests} acknowledged=${r.acknowledged} stored=${r.stored} lost=${r.lost} duplicated=${r.duplicated} ` +
      `jobs-lost=${j.jobsLost} longest-409-after-kill=${(r.longest409AfterKillMs / 1000).toFixed(1)}s`,
    `  clients=${r.clients} duration=${(r.durationMs / 1000).toFixed(1)}s events=[${events}]`,
    ...formatFigures(r, `final-exits=${r.finalExits.map((f) => `${f.name}:${f.exit.code ?? f.exit.signal}`).join(',')}`),
    `  keys-in-flight-at-kill=${r.keysOrphanedByKill} refused-409-after-kill=${r.keysRefusedAfterKill} ` +
      `jobs-running-on-killed-worker=${r.orphanedJobs.count} completed=${r.orphanedJobs.completed} ` +
      `(the last ${(r.orphanedJobs.completedAfterMs / 1000).toFixed(1)} s after the kill)`,
    `  jobs: exports accepted=${j.exportsAccepted} completed=${j.exportsCompleted} lost=${j.exportsLost} ` +
      `(unacknowledged=${j.exportsUnacknowledged}, not completed ${j.exportsUnacknowledgedNotCompleted}); ` +
      `sessions due a summary=${j.sessionsDue} never summarized=${j.sessionsNeverSummarized}; ` +
      `unfinished=${JSON.stringify(j.unfinishedJobs)}; waited ${(j.waitedMs / 1000).toFixed(1)} s`,
    ...j.anomalies.slice(0, 20).map((a) => `  ! ${a}`),
  ].join('\n');
}
