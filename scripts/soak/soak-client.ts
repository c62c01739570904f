// One soak client: a user with one conversation who asks (/memoryChat) and stores turns (memory API)
// one request after another, each under its own Idempotency-Key, retrying every failure that may be
// transient with the same key and the same body until it is acknowledged. Now and then it sends an
// acknowledged request once more, as a client does whose response was lost, and checks the replay;
// and, when asked to, now and then requests the export of its data (GDPR), a background job.
import type { Attempt, HttpClient } from './http-client.js';

export interface LogicalRequest {
  client: number;
  seq: number;
  key: string;
  route: 'chat' | 'turn';
  /** Unique per logical request and the same on every retry: reconciliation finds the turn by it. */
  question: string;
  attempts: number;
  outcome: 'acknowledged' | 'rejected' | 'unfinished';
  sessionId?: string;
  /** The turn number the service acknowledged (turn writes report it). */
  turnNumber?: number;
  /** The acknowledgement was a stored response replayed for a retry (Idempotent-Replayed). */
  replayed: boolean;
  /** From the first attempt to the acknowledgement, retries included. */
  latencyMs?: number;
  /** The request sent again after its acknowledgement: answered with the same result as a replay, or not. */
  resent?: 'same' | 'different' | 'unfinished';
  /** What the resend was answered, when it was not the same replayed result. */
  resentAnswer?: string;
  /** `409 idempotency-in-progress` answers to this key, and when the last one came (epoch ms). */
  conflicts: number;
  lastConflictAt?: number;
  /** Attempts that ended in a network error: where they went and when they were sent and failed. */
  dropped: { origin: string; sentAt: number; failedAt: number }[];
}

/** A GDPR export the client requested (`POST /me/export`). */
export interface ExportRequest {
  client: number;
  /** The request id of the 202; undefined when it was never accepted. */
  requestId?: string;
  outcome: 'accepted' | 'rejected' | 'unfinished';
}

export interface SoakClientResult {
  requests: LogicalRequest[];
  exports: ExportRequest[];
}

/** Every attempt's result, by HTTP status or by network error code. */
export interface AttemptTally {
  statuses: Map<number, number>;
  /** Error responses by status and problem code, e.g. `503 memory-store-unavailable`. */
  problems: Map<string, number>;
  network: Map<string, number>;
}

export interface SoakClientOptions {
  http: HttpClient;
  token: string;
  client: number;
  runId: string;
  random: () => number;
  /** No new request starts after this (epoch ms). */
  deadline: number;
  /** A request still not acknowledged at this time is left unfinished. */
  giveUpAt: number;
  attemptTimeoutMs: number;
  /** The share of acknowledged requests sent once more, as after a lost response. */
  resendRate: number;
  /** The share of acknowledged requests followed by a GDPR export request (default none). */
  exportRate?: number;
  tally: AttemptTally;
}

type Response = Extract<Attempt, { kind: 'response' }>;
/** What the attempts at one request leave behind. */
type AttemptRecord = Pick<LogicalRequest, 'key' | 'attempts' | 'conflicts' | 'lastConflictAt' | 'dropped'>;

/**
 * Retried: network failures and timeouts, 409 (the same key is still running), 429 and every 5xx.
 * With an Idempotency-Key a retry never runs the work twice, so retrying a 500 is safe too. Any other
 * 4xx is final: the request itself is wrong and would fail again.
 */
function isRetryable(status: number): boolean {
  return status === 409 || status === 429 || status >= 500;
}

export async function runSoakClient(o: SoakClientOptions): Promise<SoakClientResult> {
  const done: LogicalRequest[] = [];
  const exports: ExportRequest[] = [];
  let sessionId: string | undefined;
  for (let seq = 0; Date.now() < o.deadline; seq++) {
    const route = seq === 0 ? (o.client % 2 ? 'chat' : 'turn') : o.random() < 0.5 ? 'chat' : 'turn';
    const request: LogicalRequest = {
      client: o.client,
      seq,
      key: `soak-${o.runId}-${o.client}-${seq}`,
      route,
      question: `soak ${o.runId} client ${o.client} request ${seq}: total sales by region for ${2000 + (seq % 25)}`,
      attempts: 0,
      outcome: 'unfinished',
      replayed: false,
      conflicts: 0,
      dropped: [],
    };
    done.push(request);
    const path = route === 'chat' ? '/memoryChat' : sessionId ? `/sessions/${sessionId}/turns` : '/sessions/turns';
    const body =
      route === 'chat'
        ? { question: request.question, ...(sessionId ? { session_id: sessionId } : {}) }
        : { question: request.question, answer: `stored by soak client ${o.client}` };

    const started = Date.now();
    const final = await untilFinal(o, request, 'POST', path, body);
    if (!final) break; // gave up: the run is over
    if (final.status < 200 || final.status >= 300) {
      request.outcome = 'rejected';
      continue;
    }
    request.outcome = 'acknowledged';
    request.latencyMs = Date.now() - started;
    request.replayed = final.headers['idempotent-replayed'] === 'true';
    const result = resultOf(route, final);
    request.sessionId = result.sessionId;
    request.turnNumber = result.turnNumber;
    sessionId = result.sessionId;

    if (o.random() < o.resendRate) {
      const again = await untilFinal(o, request, 'POST', path, body);
      if (!again) request.resent = 'unfinished';
      else {
        const replay = again.status === final.status ? resultOf(route, again) : undefined;
        const same =
          again.headers['idempotent-replayed'] === 'true' &&
          replay?.sessionId === result.sessionId &&
          replay.turnNumber === result.turnNumber;
        request.resent = same ? 'same' : 'different';
        if (!same) {
          request.resentAnswer =
            `${again.status} replayed=${again.headers['idempotent-replayed'] ?? 'no'} ` +
            `session=${replay?.sessionId ?? '?'} turn=${replay?.turnNumber ?? '-'} (first: ${result.sessionId} turn ${result.turnNumber ?? '-'})`;
        }
      }
    }
    if (o.exportRate && o.random() < o.exportRate) exports.push(await requestExport(o));
  }
  return { requests: done, exports };
}

/** `POST /me/export` until it is accepted (a 202 with the request id) or refused for good. */
async function requestExport(o: SoakClientOptions): Promise<ExportRequest> {
  // No Idempotency-Key on this route: a retry after a lost response makes a second request, and the
  // client knows only the one it was answered.
  const final = await untilFinal(o, { key: '', attempts: 0, conflicts: 0, dropped: [] }, 'POST', '/me/export');
  if (!final) return { client: o.client, outcome: 'unfinished' };
  if (final.status !== 202) return { client: o.client, outcome: 'rejected' };
  return { client: o.client, requestId: final.body.request_id, outcome: 'accepted' };
}

/** Sends until a response that is not retryable arrives (undefined: it was time to give up first). */
async function untilFinal(
  o: SoakClientOptions,
  request: AttemptRecord,
  method: 'GET' | 'POST',
  path: string,
  body?: object,
): Promise<Response | undefined> {
  for (let attempts = 1; Date.now() < o.giveUpAt; attempts++) {
    request.attempts++;
    const attempt = await o.http.send(method, path, {
      token: o.token,
      body,
      headers: request.key ? { 'idempotency-key': request.key } : {},
      timeoutMs: o.attemptTimeoutMs,
    });
    let retryAfterMs: number | undefined;
    if (attempt.kind === 'network') {
      bump(o.tally.network, attempt.code);
      request.dropped.push({ origin: attempt.origin, sentAt: attempt.sentAt, failedAt: Date.now() });
    } else {
      bump(o.tally.statuses, attempt.status);
      if (attempt.status >= 400) bump(o.tally.problems, `${attempt.status} ${attempt.body?.code ?? 'no-problem-code'}`);
      if (attempt.status === 409 && attempt.body?.code === 'idempotency-in-progress') {
        request.conflicts++;
        request.lastConflictAt = Date.now();
      }
      if (!isRetryable(attempt.status)) return attempt;
      const retryAfter = Number(attempt.headers['retry-after']);
      if (retryAfter > 0) retryAfterMs = retryAfter * 1000;
    }
    const backoff = retryAfterMs ?? Math.min(2000, 100 * 2 ** Math.min(attempts - 1, 5));
    await new Promise((r) => setTimeout(r, backoff * (0.5 + o.random())));
  }
  return undefined;
}

/** Where the service says the turn went. A /memoryChat reply gives the session and its turn count. */
function resultOf(route: LogicalRequest['route'], response: Response): { sessionId: string; turnNumber?: number } {
  return route === 'chat'
    ? { sessionId: response.body.conversation_metadata.conversation_id }
    : { sessionId: response.body.session.session_id, turnNumber: response.body.turn.turn_number };
}

function bump<K>(map: Map<K, number>, key: K) {
  map.set(key, (map.get(key) ?? 0) + 1);
}
