import { connect } from 'node:net';
import { createSigner } from 'fast-jwt';
import { afterAll, describe, expect, it } from 'vitest';
import { type Attempt, createHttpClient, type HttpClient } from '../../../scripts/soak/http-client.js';
import { type ServiceProcess, startServiceProcess } from '../../../scripts/soak/service-process.js';
import { type SlowAnswerer, startSlowAnswerer } from '../../../scripts/soak/slow-answerer.js';
import { freshTestDatabase, type TestDatabase } from '../../support/databases/test-database.js';
import { type FakeHttpServer, sendJson, startFakeHttpServer } from '../../support/fakes/fake-http-server.js';
import { TEST_JWT_SECRET } from '../../support/service/test-app.js';

const SESSIONS = 8;
const CLIENTS_PER_SESSION = 2;
/** SIGTERM is sent once at least this many /memoryChat requests wait on the (slow) upstream. */
const IN_FLIGHT_AT_SIGTERM = 8;
const SUMMARY_LLM_DELAY_MS = 1000;
/** Network failures that mean "refused before anything ran": no listener, or a closed connection. */
const REFUSED_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE']);

interface Outcome {
  question: string;
  sessionId: string;
  kind: 'chat' | 'turn';
  /** Sent after a new connection to the service had been refused: the service was closing. */
  afterRefusal: boolean;
  attempt: Attempt;
}

const sign = createSigner({ key: TEST_JWT_SECRET, algorithm: 'HS256', expiresIn: 3_600_000 });
const tokenOf = (session: number) => sign({ sub: `shutdown-user-${session}` });

function acknowledged(a: Attempt): a is Extract<Attempt, { kind: 'response' }> {
  return a.kind === 'response' && a.status >= 200 && a.status < 300;
}

function refused(a: Attempt): boolean {
  if (a.kind === 'network') return REFUSED_CODES.has(a.code);
  return a.status === 503 && a.body?.code === 'shutting-down' && String(a.headers['content-type']).includes('application/problem+json');
}

function describeAttempt(a: Attempt): string {
  return a.kind === 'network' ? `${a.code} ${a.message}` : `${a.status} ${JSON.stringify(a.body).slice(0, 200)}`;
}

/** Resolves once a new TCP connection to `port` is refused: the listener has closed. */
async function untilConnectionsRefused(port: number): Promise<void> {
  for (;;) {
    const refusedNow = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
    });
    if (refusedNow) return;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * The summarization LLM (OpenAI API), slow so that background jobs are mid-call at SIGTERM. Call n
 * answers "summary n of session s", s read from the turns it was given; `pending` maps the calls
 * not answered yet to their session.
 */
async function startSlowSummaryLlm(): Promise<FakeHttpServer & { pending: Map<number, number> }> {
  const pending = new Map<number, number>();
  let calls = 0;
  const server = await startFakeHttpServer(async (req, res) => {
    const call = ++calls;
    const session = Number(/shutdown session (\d+)/.exec(JSON.stringify(req.body))?.[1] ?? -1);
    pending.set(call, session);
    await new Promise((r) => setTimeout(r, SUMMARY_LLM_DELAY_MS));
    pending.delete(call);
    sendJson(res, 200, {
      id: `chatcmpl-${call}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: req.body?.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: `summary ${call} of session ${session}`, refusal: null },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
  });
  return Object.assign(server, { pending });
}

describe('SIGTERM under load', () => {
  let answerer: SlowAnswerer | undefined;
  let llm: Awaited<ReturnType<typeof startSlowSummaryLlm>> | undefined;
  let service: ServiceProcess | undefined;
  let client: HttpClient | undefined;
  let testDatabase: TestDatabase | undefined;

  afterAll(async () => {
    await client?.close();
    await service?.stop();
    await answerer?.close();
    await llm?.close();
    await testDatabase?.remove();
  });

  it('when SIGTERM arrives under load, then requests and jobs in flight finish, later requests are refused, the process exits 0, ' +
    'and after a restart the stored turns are exactly the acknowledged ones, numbered without gaps', async () => {
    answerer = await startSlowAnswerer({ minMs: 300, maxMs: 800, seed: 7 });
    llm = await startSlowSummaryLlm();
    testDatabase = await freshTestDatabase();
    const env = {
      NODE_ENV: 'production',
      ...testDatabase.env,
      JWT_SECRET: TEST_JWT_SECRET,
      ANSWER_URL: answerer.url,
      // The slow answerer takes any request (forward, the default with ANSWER_URL, needs the caller's credentials).
      ANSWER_AUTH: 'none',
      LOG_LEVEL: 'warn',
      // This test is about shutdown; the rate limit has its own tests.
      RATE_LIMIT_PER_MINUTE: '0',
      // Background jobs run too: a summary after every second turn, keeping one turn verbatim.
      MEMORY_SUMMARIZATION_THRESHOLD: '2',
      MEMORY_MAX_HISTORY_MESSAGES: '1',
      SUMMARY_PROVIDER: 'openai',
      SUMMARY_MODEL: 'fake-summarizer',
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: `${llm.url}/v1`,
    };
    service = await startServiceProcess(env);
    client = createHttpClient(service.baseUrl, SESSIONS * CLIENTS_PER_SESSION + 4);
    const http = client;

    const sessionIds: string[] = [];
    const outcomes: Outcome[] = [];
    for (let s = 0; s < SESSIONS; s++) {
      const question = `shutdown session ${s} opening turn`;
      const attempt = await http.send('POST', '/sessions/turns', { token: tokenOf(s), body: { question, answer: 'ok' } });
      if (!acknowledged(attempt)) throw new Error(`creating a session failed: ${describeAttempt(attempt)}`);
      sessionIds.push(attempt.body.session.session_id);
      outcomes.push({ question, sessionId: attempt.body.session.session_id, kind: 'turn', afterRefusal: false, attempt });
    }

    let refusing = false;
    const clients = Array.from({ length: SESSIONS * CLIENTS_PER_SESSION }, async (_, c) => {
      const s = c % SESSIONS;
      const sessionId = sessionIds[s]!;
      // Each client sends until a request it sent after the refusal was observed has ended.
      for (let seq = 0; ; seq++) {
        const kind = (seq + c) % 2 === 0 ? 'chat' : 'turn';
        const question = `shutdown session ${s} client ${c} request ${seq} (${kind})`;
        const afterRefusal = refusing;
        const attempt =
          kind === 'chat'
            ? await http.send('POST', '/memoryChat', { token: tokenOf(s), body: { question, session_id: sessionId } })
            : await http.send('POST', `/sessions/${sessionId}/turns`, {
                token: tokenOf(s),
                body: { question, answer: `answer ${c}/${seq}` },
              });
        outcomes.push({ question, sessionId, kind, afterRefusal, attempt });
        if (afterRefusal) return;
      }
    });

    const waitStarted = Date.now();
    while (answerer.pending().length < IN_FLIGHT_AT_SIGTERM || llm.pending.size === 0) {
      if (Date.now() - waitStarted > 20_000) throw new Error('the load never had enough requests and jobs in flight');
      await new Promise((r) => setTimeout(r, 5));
    }
    // Read in the same tick as the signal: each of these is inside the service, waiting on the upstream
    // (requests) or on the LLM (summarization jobs).
    const inFlight = new Set(answerer.pending());
    const jobsInFlight = new Map(llm.pending);
    process.kill(service.pid, 'SIGTERM');
    const signalledAt = performance.now();
    await untilConnectionsRefused(service.port);
    refusing = true;
    const exit = await service.exited;
    const exitMs = performance.now() - signalledAt;
    await Promise.all(clients);

    const byQuestion = new Map(outcomes.map((o) => [o.question, o]));
    const failures = outcomes.filter((o) => !acknowledged(o.attempt) && !refused(o.attempt));
    const lateAccepted = outcomes.filter((o) => o.afterRefusal && !refused(o.attempt));
    const lateRefused = outcomes.filter((o) => o.afterRefusal && refused(o.attempt));
    const inFlightOutcomes = [...inFlight].map((q) => byQuestion.get(q));
    const acked = outcomes.filter((o) => acknowledged(o.attempt));
    console.log(
      `graceful shutdown: requests=${outcomes.length} in-flight-at-sigterm=${inFlight.size} jobs-in-flight=${jobsInFlight.size} ` +
        `acknowledged=${acked.length} refused-after-close=${lateRefused.length} ` +
        `(503 problem: ${lateRefused.filter((o) => o.attempt.kind === 'response').length}, ` +
        `connection: ${lateRefused.filter((o) => o.attempt.kind === 'network').length}) exit=${exit.code} exit-ms=${Math.round(exitMs)}`,
    );

    expect(exit).toEqual({ code: 0, signal: null });
    expect(failures.map((o) => `${o.question}: ${describeAttempt(o.attempt)}`)).toEqual([]);
    expect(inFlightOutcomes.every((o) => o !== undefined && acknowledged(o.attempt) && o.attempt.status === 200)).toBe(true);
    expect(lateAccepted.map((o) => `${o.question}: ${describeAttempt(o.attempt)}`)).toEqual([]);
    expect(lateRefused).toHaveLength(SESSIONS * CLIENTS_PER_SESSION);

    // Restarted on the same database: exactly the acknowledged turns are stored, numbered 1..n, and
    // each summary a job was writing at SIGTERM was saved (or a later one).
    service = await startServiceProcess(env);
    client = createHttpClient(service.baseUrl, 4);
    for (let s = 0; s < SESSIONS; s++) {
      const read = await client.send('GET', `/sessions/${sessionIds[s]}`, { token: tokenOf(s) });
      if (!acknowledged(read)) throw new Error(`reading the session failed: ${describeAttempt(read)}`);
      const stored = read.body.turns as { turn_number: number; question: string }[];
      const ackedHere = acked.filter((o) => o.sessionId === sessionIds[s]);
      expect(stored.map((t) => t.question).sort()).toEqual(ackedHere.map((o) => o.question).sort());
      expect(stored.map((t) => t.turn_number)).toEqual(stored.map((_, i) => i + 1));
      expect(read.body.message_count).toBe(stored.length);
      for (const o of ackedHere.filter((o) => o.kind === 'turn')) {
        const turnNumber = (o.attempt as Extract<Attempt, { kind: 'response' }>).body.turn.turn_number;
        expect(stored.find((t) => t.turn_number === turnNumber)?.question).toBe(o.question);
      }
      const pendingCall = Math.min(...[...jobsInFlight].filter(([, session]) => session === s).map(([call]) => call));
      if (Number.isFinite(pendingCall)) {
        expect(Number(/^summary (\d+) of session/.exec(read.body.summary ?? '')?.[1] ?? -1)).toBeGreaterThanOrEqual(pendingCall);
      }
      // The session's counter was not advanced by a turn that was not stored: the next number follows on.
      const next = await client.send('POST', `/sessions/${sessionIds[s]}/turns`, {
        token: tokenOf(s),
        body: { question: 'after the restart', answer: 'ok' },
      });
      expect(acknowledged(next) && next.body.turn.turn_number).toBe(stored.length + 1);
    }
    expect(await service.stop()).toEqual({ code: 0, signal: null });
  }, 90_000);
});
