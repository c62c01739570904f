import type { AddressInfo } from 'node:net';
import net from 'node:net';

export interface TcpFaultProxy {
  port: number;
  /** The next bytes a client sends reset its connection instead of reaching the server. */
  resetOnNextRequest(): void;
  /** The server is gone: open connections drop and new ones are refused, until `up()`. */
  down(): void;
  up(): void;
  /** The network stalls: connections stay open but no byte moves either way, until `resume()` delivers them. */
  stall(): void;
  resume(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of a Postgres socket that can cut a connection mid-request, the way a
 * network fault or a database restart does.
 */
export async function startTcpFaultProxy(target: net.NetConnectOpts): Promise<TcpFaultProxy> {
  let armed = false;
  let isDown = false;
  let stalled = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (isDown) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target);
    sockets.add(client).add(upstream);
    if (stalled) {
      client.pause();
      upstream.pause();
    }
    client.on('data', (chunk) => {
      if (armed) {
        armed = false;
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    resetOnNextRequest() {
      armed = true;
    },
    down() {
      isDown = true;
      for (const s of sockets) s.destroy();
    },
    up() {
      isDown = false;
    },
    stall() {
      stalled = true;
      for (const s of sockets) s.pause();
    },
    resume() {
      stalled = false;
      for (const s of sockets) s.resume();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
