// One soak client: a user with one conversation who asks (/memoryChat) and stores turns (memory API)
// one request after another, each under its own Idempotency-Key, retrying every failure that may be
// transient with the same key and the same body until it is acknowledged. Now and then it sends an
// acknowledged request once more, as a client does whose response was lost, and checks the replay.
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
  tally: AttemptTally;
}

type Response = Extract<Attempt, { kind: 'response' }>;

/**
 * Retried: network failures and timeouts, 409 (the same key is still running), 429 and every 5xx.
 * With an Idempotency-Key a retry never runs the work twice, so retrying a 500 is safe too. Any other
 * 4xx is final: the request itself is wrong and would fail again.
 */
function isRetryable(status: number): boolean {
  return status === 409 || status === 429 || status >= 500;
}

export async function runSoakClient(o: SoakClientOptions): Promise<LogicalRequest[]> {
  const done: LogicalRequest[] = [];
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
    };
    done.push(request);
    const path = route === 'chat' ? '/memoryChat' : sessionId ? `/sessions/${sessionId}/turns` : '/sessions/turns';
    const body =
      route === 'chat'
        ? { question: request.question, ...(sessionId ? { session_id: sessionId } : {}) }
        : { question: request.question, answer: `stored by soak client ${o.client}` };

    const started = Date.now();
    const final = await untilFinal(o, request, path, body);
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
      const again = await untilFinal(o, request, path, body);
      if (!again) request.resent = 'unfinished';
      else {
        const replay = again.status === final.status ? resultOf(route, again) : undefined;
        const same =
          again.headers['idempotent-replayed'] === 'true' &&
          replay?.sessionId === result.sessionId &&
          replay.turnNumber === result.turnNumber;
        request.resent = same ? 'same' : 'different';
        if (!same) {
          request.resentAnswer = `${again.status} replayed=${again.headers['idempotent-replayed'] ?? 'no'} ` +
            `session=${replay?.sessionId ?? '?'} turn=${replay?.turnNumber ?? '-'} (first: ${result.sessionId} turn ${result.turnNumber ?? '-'})`;
        }
      }
    }
  }
  return done;
}

/** Sends until a response that is not retryable arrives (undefined: it was time to give up first). */
async function untilFinal(o: SoakClientOptions, request: LogicalRequest, path: string, body: object): Promise<Response | undefined> {
  for (let attempts = 1; Date.now() < o.giveUpAt; attempts++) {
    request.attempts++;
    const attempt = await o.http.send('POST', path, {
      token: o.token,
      body,
      headers: { 'idempotency-key': request.key },
      timeoutMs: o.attemptTimeoutMs,
    });
    let retryAfterMs: number | undefined;
    if (attempt.kind === 'network') {
      bump(o.tally.network, attempt.code);
    } else {
      bump(o.tally.statuses, attempt.status);
      if (attempt.status >= 400) bump(o.tally.problems, `${attempt.status} ${attempt.body?.code ?? 'no-problem-code'}`);
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
