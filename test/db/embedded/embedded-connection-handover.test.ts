// The embedded Postgres serves one connection at a time (services/db/embedded/pglite-process.mjs). A client
// whose connection broke reconnects at once, before the database process has handled the old close;
// that reconnect must wait for the handover rather than be refused, and a second live connection is
// still refused once the wait is over.
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../../services/db/embedded/embedded-postgres.js';
import { freshDataDir } from '../../support/databases/test-database.js';

describe('the embedded database across a broken connection', () => {
  let dataDir: string;
  let embedded: EmbeddedPostgres;

  beforeAll(async () => {
    dataDir = await freshDataDir();
    embedded = await startEmbeddedPostgres(dataDir);
  });
  afterAll(async () => {
    await embedded?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  const connect = async () => {
    const client = new pg.Client(embedded.connection);
    client.on('error', () => {});
    await client.connect();
    return client;
  };

  it('when a connection is cut, then a connection opened at once is served', async () => {
    for (let round = 0; round < 25; round++) {
      const broken = await connect();
      await broken.query('BEGIN');
      await broken.query('SELECT 1');
      // The socket dies as under a network reset: no Terminate message, the transaction left open.
      (broken as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      const next = await connect();
      const { rows } = await next.query<{ open: boolean }>('SELECT now() = statement_timestamp() AS open');
      // The broken connection's transaction was rolled back, not inherited.
      expect(rows[0]?.open).toBe(true);
      await next.end();
    }
  });

  it('when a refused client never closes its side, then the database still stops', async () => {
    const ownDir = await freshDataDir();
    const own = await startEmbeddedPostgres(ownDir);
    try {
      const holder = new pg.Client(own.connection);
      await holder.connect();
      // A client that keeps its side open after the server's FIN (allowHalfOpen): only a destroyed
      // socket lets the server close.
      const refused = net.connect({ path: path.join(own.connection.host, '.s.PGSQL.5432'), allowHalfOpen: true }).resume();
      await once(refused, 'end');
      await holder.end();
      await own.stop();
    } finally {
      await rm(ownDir, { recursive: true, force: true });
    }
  });

  it('when a connection stays open, then a second one is refused after the wait', async () => {
    const holder = await connect();
    await expect(connect()).rejects.toThrow();
    const { rows } = await holder.query<{ one: number }>('SELECT 1 AS one');
    expect(rows[0]?.one).toBe(1);
    await holder.end();
  });
});
