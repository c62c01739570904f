import type { AddressInfo } from 'node:net';
import net from 'node:net';
import pg from 'pg';

export interface DroppingPostgres {
  port: number;
  /** Connections accepted so far. */
  connections: number;
  close(): Promise<void>;
}

/**
 * A server that speaks just enough of PostgreSQL's protocol to admit a connection (trust
 * authentication, a backend key, ready for a query) and then drops it at the first message the client
 * sends: a statement cut off mid-flight, the way a server crash or a network fault cuts it, at a
 * moment a real server cannot be made to choose. A connection that sends nothing stays open.
 */
export async function startDroppingPostgres(): Promise<DroppingPostgres> {
  const sockets = new Set<net.Socket>();
  const state = { connections: 0 };
  const server = net.createServer((socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let started = false;
    socket.on('data', () => {
      if (started) {
        socket.destroy();
        return;
      }
      started = true;
      socket.write(
        Buffer.concat([
          message('R', int32(0)),
          message('K', Buffer.concat([int32(4242 + state.connections), int32(7)])),
          message('Z', Buffer.from('I')),
        ]),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A pool of `max` connections to a new DroppingPostgres; `close` ends both. */
export async function poolOnDroppingPostgres(max: number): Promise<{ server: DroppingPostgres; pool: pg.Pool; close(): Promise<void> }> {
  const server = await startDroppingPostgres();
  const pool = new pg.Pool({ host: '127.0.0.1', port: server.port, user: 'memorychat', database: 'memorychat', max });
  // As the service's pools: a dropped idle connection is no error of the process.
  pool.on('error', () => {});
  return {
    server,
    pool,
    async close() {
      await pool.end();
      await server.close();
    },
  };
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

function message(type: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(type), int32(body.length + 4), body]);
}
