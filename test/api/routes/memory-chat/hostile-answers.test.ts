// An answerer that replies with hundreds of megabytes, huge cells, NULs: the service answers no 5xx,
// stores bounded turns, and its memory stays bounded. The service runs as a child process (the
// compiled entry point) so that its peak RSS (VmHWM in /proc) is its own, not the test runner's.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshTestDatabase, type TestDatabase } from '../../../support/databases/test-database.js';
import { TEST_JWT_SECRET } from '../../../support/service/test-app.js';

const SERVER = 'dist/services/api/server.js';
const MB = 1_048_576;
const MAX_REPLY_BYTES = 16 * MB;
const TEXT_BYTES = 262_144;

/** Writes `{"answer":"xxx…"<rest>}` of about `answerBytes`, in 1 MB chunks that are never held whole. */
async function streamJsonAnswer(res: ServerResponse, answerBytes: number, rest = '') {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(MB, 'x');
  res.write('{"answer":"');
  for (let sent = 0; sent < answerBytes && !res.destroyed; sent += MB) {
    if (!res.write(chunk)) await new Promise((r) => res.once('drain', r).once('close', r));
  }
  res.end(`"${rest}}`);
}

const cell = 'c'.repeat(3 * MB);
const REPLIES: Record<string, (res: ServerResponse) => Promise<void> | void> = {
  'a 300 MB answer': (res) => streamJsonAnswer(res, 300 * MB),
  'a 12 MB answer': (res) => streamJsonAnswer(res, 12 * MB, ',"sql_query":"SELECT 1","tables_used":["t"]'),
  'huge cells': (res) => {
    const rows = Object.fromEntries([1, 2, 3, 4].map((n) => [`Row ${n}`, [{ columnName: 'c', value: cell }]]));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ answer: 'four huge cells', sql_query: 'SELECT c FROM big', execution_result: rows }));
  },
  'NULs and lone surrogates': (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      '{"answer":"a\\u0000b\\ud800c","sql_query":"SELECT \'\\u0000\'","execution_result":[{"k\\u0000":"v\\udc00"}],"tokens":{"n":1}}',
    );
  },
};

function peakRssMb(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { peak: Math.round(kb('VmHWM') / 1024), now: Math.round(kb('VmRSS') / 1024) };
}

describe('hostile answers from the upstream answerer', () => {
  let upstream: Server;
  let database: TestDatabase;
  let child: ChildProcess;
  let url: string;
  const token = createSigner({ key: TEST_JWT_SECRET, algorithm: 'HS256', expiresIn: 3_600_000 })({ sub: 'hostile' });

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        // No OpenAPI document here: the answerer's first contact asks for one (docs/denodo-ai-sdk.md#releases).
        if (req.method !== 'POST') return void res.writeHead(404).end();
        const question = String(JSON.parse(body).question);
        const reply = Object.entries(REPLIES).find(([key]) => question.includes(key))?.[1];
        if (reply) void reply(res);
        else res.writeHead(200, { 'content-type': 'application/json' }).end('{"answer":"fine","sql_query":"SELECT 1"}');
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    database = await freshTestDatabase();
    child = spawn(process.execPath, [SERVER], {
      env: {
        PATH: process.env.PATH,
        ...database.env,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        JWT_SECRET: TEST_JWT_SECRET,
        ANSWER_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/answerQuestion`,
        // The fake upstream takes any request (forward, the default with ANSWER_URL, needs the caller's credentials).
        ANSWER_AUTH: 'none',
        ANSWER_MAX_REPLY_BYTES: String(MAX_REPLY_BYTES),
        MEMORY_STORE_TEXT_BYTES: String(TEXT_BYTES),
        RATE_LIMIT_PER_MINUTE: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk) => {
        out = (out + chunk).slice(-20_000);
        const found = /Server listening at (http:\/\/[^"\s]+)/.exec(out)?.[1];
        if (found && out.includes('memorychat ready')) resolve(found);
      });
      child.stderr!.on('data', (chunk) => (out = (out + chunk).slice(-20_000)));
      child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
    });
  }, 120_000);
  afterAll(async () => {
    child?.kill('SIGTERM');
    await new Promise((r) => (child?.exitCode === null ? child.once('exit', r) : r(undefined)));
    await new Promise((r) => upstream?.close(r));
    await database?.remove();
  });

  const ask = async (question: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${url}/memoryChat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ question }),
    });
    const text = await res.text();
    return { status: res.status, bytes: text.length, body: JSON.parse(text) };
  };

  it('when answers are hundreds of megabytes, cells huge or texts hold NULs, then no 5xx, bounded turns and a bounded peak RSS', async () => {
    expect((await ask('a normal question')).status).toBe(200);
    const before = peakRssMb(child.pid!);

    const huge = await ask('a 300 MB answer');
    expect([huge.status, huge.body.code]).toEqual([502, 'upstream-bad-response']);

    const big = await ask('a 12 MB answer', { 'idempotency-key': 'big-answer-1' });
    expect(big.status).toBe(200);
    expect(big.body.warnings.join(' ')).toContain('the answer was');
    const session = big.body.conversation_metadata.conversation_id;
    const stored = await fetch(`${url}/sessions/${session}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
    const answer: string = stored.turns.at(-1).answer;
    expect(Buffer.byteLength(answer)).toBeLessThanOrEqual(TEXT_BYTES);
    expect(answer).toMatch(/\[cut by memorychat: the first \d+ of \d+ bytes are stored\]$/);
    // The retry of a stored turn gets the stored reply, not a second turn.
    const retry = await ask('a 12 MB answer', { 'idempotency-key': 'big-answer-1' });
    expect([retry.status, retry.bytes]).toEqual([200, big.bytes]);

    const cells = await ask('huge cells');
    expect(cells.status).toBe(200);
    expect(cells.body.warnings.join(' ')).toContain('only 0 of 4 result rows were stored');

    const nuls = await ask('NULs and lone surrogates');
    expect(nuls.status).toBe(200);
    expect(nuls.body.answer).toBe('a\uFFFDb\uFFFDc');

    const after = peakRssMb(child.pid!);
    const turns = await fetch(`${url}/sessions`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
    expect(turns.sessions.length).toBe(5);
    console.log(
      `API peak RSS (VmHWM of the child process): ${before.peak} MB before the hostile answers, ${after.peak} MB after ` +
        `(now ${after.now} MB); the largest answer was 300 MB, ANSWER_MAX_REPLY_BYTES ${MAX_REPLY_BYTES / MB} MB`,
    );
    expect(after.peak - before.peak).toBeLessThan(300);
  }, 300_000);
});
