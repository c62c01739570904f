// The soak (docs/soak.md): N clients with Idempotency-Keys and retries against a server-mode service
// (DATABASE_URL) for a bounded time, the database and/or the service restarted mid-run, then the
// stored turns reconciled against the acknowledged requests.
import { createSigner } from 'fast-jwt';
import { rng as seededRandom } from '../bench/data.js';
import { startDatabaseServer } from './database-server.js';
import { createHttpClient, type HttpClient } from './http-client.js';
import { type Reconciliation, readStoredTurns, reconcile } from './reconcile.js';
import { type ProcessExit, type ServiceProcess, startServiceProcess } from './service-process.js';
import { startSlowAnswerer } from './slow-answerer.js';
import { type AttemptTally, type LogicalRequest, runSoakClient, type SoakClientResult } from './soak-client.js';

export type RestartKind = 'db' | 'service' | 'both' | 'none';

export interface SoakOptions {
  clients: number;
  durationMs: number;
  restart: RestartKind;
  /** The upstream answerer's delay range. */
  answerMinMs: number;
  answerMaxMs: number;
  /** After the duration, how long unacknowledged requests keep retrying before they count as unfinished. */
  drainMs: number;
  /** A client stops waiting for a response after this and retries. */
  attemptTimeoutMs: number;
  /** The share of acknowledged requests sent once more, as after a lost response, to check the replay. */
  resendRate: number;
  seed: number;
  /** A stopped, migrated embedded DATA_DIR to start the database from (saves its initdb). */
  templateDataDir?: string;
  /** Appends the service processes' output (their JSON log) to this file. */
  serviceLog?: string;
  /** The service's LOG_LEVEL (default warn). */
  serviceLogLevel?: string;
  log: (message: string) => void;
}

export interface Restart {
  kind: 'db' | 'service';
  atMs: number;
  /** From the stop to the restarted process being ready. */
  downMs: number;
  /** The service's exit on SIGTERM (service restarts only). */
  exit?: ProcessExit;
}

/** What every soak reports about its clients' requests and the turns stored for them. */
export interface SoakFigures extends Reconciliation {
  clients: number;
  durationMs: number;
  requests: number;
  attempts: number;
  retries: number;
  replayed: number;
  /** Acknowledged requests sent again: answered as the same replayed result, or not (must be 0). */
  resent: number;
  resentDifferent: number;
  rejected: number;
  unfinished: number;
  statuses: Record<string, number>;
  problems: Record<string, number>;
  network: Record<string, number>;
  latencyMs: { p50: number; p95: number; max: number };
  acknowledgedPerSecond: number;
}

export interface SoakReport extends SoakFigures {
  restarts: Restart[];
  finalExit: ProcessExit;
}

export const TENANT = 'soak';
export const JWT_SECRET = 'soak-secret-that-is-at-least-32-characters-long';

/**
 * Starts the soak's clients, each its own user of TENANT sending until the deadline, through the HTTP
 * client `httpFor` gives it (the single service's soak and the fleet's).
 */
export function startSoakClients(
  o: Pick<SoakOptions, 'clients' | 'seed' | 'durationMs' | 'drainMs' | 'attemptTimeoutMs' | 'resendRate'> & { exportRate?: number },
  runId: string,
  httpFor: (client: number) => HttpClient,
  tally: AttemptTally,
): { started: number; clients: Promise<SoakClientResult>[] } {
  const sign = createSigner({ key: JWT_SECRET, algorithm: 'HS256', expiresIn: 24 * 3_600_000 });
  const started = Date.now();
  const deadline = started + o.durationMs;
  const clients = Array.from({ length: o.clients }, (_, i) =>
    runSoakClient({
      http: httpFor(i),
      token: sign({ sub: `soak-user-${i}`, tenant: TENANT }),
      client: i,
      runId,
      random: seededRandom(o.seed * 1000 + i),
      deadline,
      giveUpAt: deadline + o.drainMs,
      attemptTimeoutMs: o.attemptTimeoutMs,
      resendRate: o.resendRate,
      exportRate: o.exportRate,
      tally,
    }),
  );
  return { started, clients };
}

export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const runId = o.seed.toString(36);
  const answerer = await startSlowAnswerer({ minMs: o.answerMinMs, maxMs: o.answerMaxMs, seed: o.seed });
  const db = await startDatabaseServer({ templateDataDir: o.templateDataDir });
  const env = {
    NODE_ENV: 'production',
    DATABASE_URL: db.url,
    // The PGlite server takes one connection at a time.
    DATABASE_POOL_MAX: '1',
    JWT_SECRET,
    ANSWER_URL: answerer.url,
    ANSWER_AUTH: 'none',
    // Short timeouts keep an orphaned Idempotency-Key claim's lease (answer + LLM timeouts + 60 s) short.
    ANSWER_TIMEOUT_MS: '5000',
    LLM_TIMEOUT_MS: '1000',
    // Every client is its own user sending back to back; the soak is about durability, not the limit.
    RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: o.serviceLogLevel ?? 'warn',
  };
  const services = new ServiceLifecycle(env, o);
  let http: HttpClient | undefined;
  try {
    const first = await services.start();
    http = createHttpClient(first.baseUrl, o.clients);
    o.log(`service on ${first.baseUrl}, database ${db.url}; ${o.clients} clients for ${o.durationMs / 1000} s, restart: ${o.restart}`);

    const tally = newTally();
    const { started, clients } = startSoakClients(o, runId, () => http!, tally);

    const restarts: Restart[] = [];
    for (const { kind, at } of restartPlan(o.restart, o.durationMs)) {
      await new Promise((r) => setTimeout(r, Math.max(0, started + at - Date.now())));
      const stopAt = Date.now();
      let exit: ProcessExit | undefined;
      if (kind === 'db') {
        await db.stop();
        await db.start();
      } else {
        exit = await services.stop();
        await services.start(first.port);
      }
      restarts.push({ kind, atMs: stopAt - started, downMs: Date.now() - stopAt, ...(exit ? { exit } : {}) });
      o.log(
        `restarted the ${kind === 'db' ? 'database' : 'service'} at ${((stopAt - started) / 1000).toFixed(1)} s, down ${Date.now() - stopAt} ms`,
      );
    }

    const requests: LogicalRequest[] = (await Promise.all(clients)).flatMap((c) => c.requests);
    const finishedMs = Date.now() - started;
    const finalExit = await services.stop();
    // The server takes one connection: the audit reads once the service has let go of it.
    const { turns, sessions } = await readStoredTurns(db.url, TENANT);
    const reconciliation = reconcile(requests, turns, sessions);
    return { ...soakFigures(o, requests, tally, reconciliation, finishedMs), restarts, finalExit };
  } finally {
    await http?.close();
    await services.stop();
    await db.close();
    await answerer.close();
  }
}

/** The service process of the moment: started, stopped with SIGTERM, its log kept for diagnosis. */
class ServiceLifecycle {
  private current: ServiceProcess | undefined;

  constructor(
    private readonly env: Record<string, string>,
    private readonly o: Pick<SoakOptions, 'serviceLog' | 'log'>,
  ) {}

  async start(port?: number): Promise<ServiceProcess> {
    this.current = await startServiceProcess(this.env, { port, logFile: this.o.serviceLog });
    return this.current;
  }

  async stop(): Promise<ProcessExit> {
    const service = this.current;
    this.current = undefined;
    if (!service) return { code: null, signal: null };
    const exit = await service.stop();
    if (exit.code !== 0) {
      const fatal = service
        .output()
        .split('\n')
        .filter((line) => /"level":(50|60)|closing/.test(line));
      this.o.log(`the service exited with ${exit.code ?? exit.signal}; its last errors:\n${fatal.slice(-5).join('\n')}`);
    }
    return exit;
  }
}

/** The figures of a soak whose clients made `requests`, reconciled against the stored turns. */
export function soakFigures(
  o: Pick<SoakOptions, 'clients' | 'durationMs'>,
  requests: LogicalRequest[],
  tally: AttemptTally,
  reconciliation: Reconciliation,
  finishedMs: number,
): SoakFigures {
  const latencies = requests.flatMap((r) => (r.latencyMs === undefined ? [] : [r.latencyMs])).sort((a, b) => a - b);
  const attempts = requests.reduce((n, r) => n + r.attempts, 0);
  return {
    ...reconciliation,
    clients: o.clients,
    durationMs: finishedMs,
    requests: requests.length,
    attempts,
    retries: attempts - requests.length,
    replayed: requests.filter((r) => r.replayed).length,
    resent: requests.filter((r) => r.resent).length,
    resentDifferent: requests.filter((r) => r.resent && r.resent !== 'same').length,
    rejected: requests.filter((r) => r.outcome === 'rejected').length,
    unfinished: requests.filter((r) => r.outcome === 'unfinished').length,
    statuses: Object.fromEntries([...tally.statuses].sort(([a], [b]) => a - b)),
    problems: Object.fromEntries([...tally.problems].sort()),
    network: Object.fromEntries(tally.network),
    latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95), max: latencies.at(-1) ?? NaN },
    acknowledgedPerSecond: reconciliation.acknowledged / (o.durationMs / 1000),
    anomalies: [
      ...reconciliation.anomalies,
      ...requests
        .filter((r) => r.resent === 'different')
        .slice(0, 10)
        .map((r) => `resent ${r.key}: ${r.resentAnswer}`),
    ],
  };
}

/** A new tally of attempts' results. */
export function newTally(): AttemptTally {
  return { statuses: new Map(), problems: new Map(), network: new Map() };
}

/**
 * When each restart happens: one in the middle, or the service at a third and the database at two
 * thirds (the service first: after a database restart some clients wait out a claim's lease).
 */
function restartPlan(kind: RestartKind, durationMs: number): { kind: 'db' | 'service'; at: number }[] {
  if (kind === 'none') return [];
  if (kind === 'both')
    return [
      { kind: 'service', at: durationMs / 3 },
      { kind: 'db', at: (2 * durationMs) / 3 },
    ];
  return [{ kind, at: durationMs / 2 }];
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The figures as one line (and the lines the CLI prints). */
export function formatSoakReport(r: SoakReport): string {
  const restarts = r.restarts
    .map((x) => `${x.kind}@${(x.atMs / 1000).toFixed(1)}s(down ${x.downMs} ms${x.exit ? `, exit ${x.exit.code}` : ''})`)
    .join(' ');
  return [
    `soak: clients=${r.clients} duration=${(r.durationMs / 1000).toFixed(1)}s restarts=${r.restarts.length} [${restarts}]`,
    ...formatFigures(r, `final-exit=${r.finalExit.code}`),
  ].join('\n');
}

/** The lines about requests, stored turns and latency (`latencyTail` ends the latency line). */
export function formatFigures(r: SoakFigures, latencyTail: string): string[] {
  const fiveXx = Object.entries(r.statuses).filter(([s]) => Number(s) >= 500);
  return [
    `  requests=${r.requests} attempts=${r.attempts} retries=${r.retries} acknowledged=${r.acknowledged} replayed=${r.replayed} ` +
      `resent=${r.resent} resent-different=${r.resentDifferent} rejected=${r.rejected} unfinished=${r.unfinished}`,
    `  statuses=${JSON.stringify(r.statuses)} 5xx=${JSON.stringify(Object.fromEntries(fiveXx))} network=${JSON.stringify(r.network)}`,
    `  problems=${JSON.stringify(r.problems)}`,
    `  stored=${r.stored} lost=${r.lost} duplicated=${r.duplicated} misplaced=${r.misplaced} ` +
      `unacknowledged-stored=${r.unacknowledgedStored} inconsistent-sessions=${r.inconsistentSessions}`,
    `  latency p50=${r.latencyMs.p50} ms p95=${r.latencyMs.p95} ms max=${r.latencyMs.max} ms ` +
      `acknowledged/s=${r.acknowledgedPerSecond.toFixed(1)} ${latencyTail}`,
    ...r.anomalies.map((a) => `  ! ${a}`),
  ];
}
