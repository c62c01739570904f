// Clients that send slowly or not at all are timed out, so they cannot hold the process's sockets.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson } from '../../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../support/service/service-with-upstream.js';
import { startTestApp, type TestApp } from '../../support/service/test-app.js';

const REQUEST_TIMEOUT_MS = 1500;
const KEEP_ALIVE_TIMEOUT_MS = 1000;

interface HeldSocket {
  socket: Socket;
  received: string;
  closedAt?: number;
}

/** A socket that sends `head` (and nothing more), recording what it receives and when it closes. */
function hold(port: number, head: string): Promise<HeldSocket> {
  return new Promise((resolve, reject) => {
    const held: HeldSocket = { socket: connect(port, '127.0.0.1'), received: '' };
    held.socket.setEncoding('latin1');
    held.socket.on('data', (chunk: string) => (held.received += chunk));
    held.socket.on('close', () => (held.closedAt = Date.now()));
    held.socket.on('error', () => {});
    held.socket.once('connect', () => held.socket.write(head, () => resolve(held)));
    held.socket.once('error', reject);
  });
}

async function waitUntil(done: () => boolean, ms: number) {
  const until = Date.now() + ms;
  while (!done() && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}

describe('slow clients', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let port: number;
  let token: string;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
      RATE_LIMIT_PER_MINUTE: '0',
    }));
    port = Number(new URL(t.baseUrl).port);
    token = t.token('slow');
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  it('when 200 sockets send part of a body and stop, then each gets 408 request-timeout and is closed', async () => {
    const started = Date.now();
    const head = (i: number) =>
      `POST /memoryChat HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"question":"part ${i}`;
    const sockets = await Promise.all(Array.from({ length: 200 }, (_, i) => hold(port, head(i))));
    await waitUntil(() => sockets.every((s) => s.closedAt !== undefined), 20_000);
    const open = sockets.filter((s) => s.closedAt === undefined).length;
    for (const s of sockets) s.socket.destroy();
    expect(open).toBe(0);
    for (const s of sockets) {
      expect(s.received).toMatch(/^HTTP\/1\.1 408 /);
      expect(s.received).toContain('"code":"request-timeout"');
    }
    const slowest = Math.max(...sockets.map((s) => s.closedAt! - started));
    console.log(`200 partial bodies: all closed with 408 after at most ${slowest} ms (REQUEST_TIMEOUT_MS=${REQUEST_TIMEOUT_MS})`);
    expect(upstream.requests).toHaveLength(0);
  }, 60_000);

  it('when a socket sends only part of its headers, or nothing, then it is closed too', async () => {
    const partialHeaders = await hold(port, `GET /sessions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthor`);
    const silent = await hold(port, '');
    await waitUntil(() => partialHeaders.closedAt !== undefined && silent.closedAt !== undefined, 15_000);
    partialHeaders.socket.destroy();
    silent.socket.destroy();
    expect(partialHeaders.closedAt).toBeDefined();
    expect(silent.closedAt).toBeDefined();
  }, 30_000);

  it('when a kept-alive connection stays idle after its response, then it is closed after KEEP_ALIVE_TIMEOUT_MS', async () => {
    const idle = await hold(port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    await waitUntil(() => idle.received.includes('\r\n\r\n'), 5_000);
    const answeredAt = Date.now();
    expect(idle.received).toMatch(/^HTTP\/1\.1 200 /);
    await waitUntil(() => idle.closedAt !== undefined, 10_000);
    idle.socket.destroy();
    expect(idle.closedAt).toBeDefined();
    expect(idle.closedAt! - answeredAt).toBeLessThan(KEEP_ALIVE_TIMEOUT_MS + 3000);
  }, 30_000);

  it('when the whole body arrived and the answer takes longer than REQUEST_TIMEOUT_MS, then the answer is still sent', async () => {
    upstream.handle(async (req, res) => {
      await new Promise((r) => setTimeout(r, REQUEST_TIMEOUT_MS * 2.5));
      sendJson(res, 200, salesReply(String(req.body?.question ?? '')));
    });
    const reply = await t.request('POST', '/memoryChat', { token, body: { question: 'Sales in 2024, slowly?' } });
    expect(reply.status).toBe(200);
    expect(reply.body.answer).toContain('2024');
  }, 30_000);
});

describe('open connections per process', () => {
  it('when MAX_CONNECTIONS connections are open, then the next one is closed at once, and served again once one closes', async () => {
    const t = await startTestApp({ MAX_CONNECTIONS: '3', RATE_LIMIT_PER_MINUTE: '0' });
    const port = Number(new URL(t.baseUrl).port);
    const head = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
    try {
      const open = await Promise.all([1, 2, 3].map(() => hold(port, head)));
      await waitUntil(() => open.every((s) => s.received.includes('\r\n\r\n')), 5_000);
      const refused = await hold(port, head);
      await waitUntil(() => refused.closedAt !== undefined, 5_000);
      expect(refused.closedAt).toBeDefined();
      expect(refused.received).toBe('');
      open[0]!.socket.destroy();
      await waitUntil(() => open[0]!.closedAt !== undefined, 5_000);
      await new Promise((r) => setTimeout(r, 200));
      const served = await hold(port, head);
      await waitUntil(() => served.received.includes('\r\n\r\n'), 5_000);
      expect(served.received).toMatch(/^HTTP\/1\.1 200 /);
      for (const s of [...open, served]) s.socket.destroy();
    } finally {
      await t.close();
    }
  }, 30_000);
});
