import { createServer, type Server } from 'node:http';
import type { JobQueue } from '../core/job-queue.js';
import type { Metrics } from '../core/metrics.js';
import type { Queryable } from '../db/repositories/queryable.js';

/**
 * The worker's own small HTTP surface for Kubernetes probes and Prometheus: `/healthz` (process),
 * `/readyz` (database and Redis answer), `/metrics` (job counts, failures and durations by kind).
 */
export async function startWorkerHttp(options: {
  port: number;
  host: string;
  db: Queryable;
  queue: Pick<JobQueue, 'counts'>;
  metrics: Metrics;
}): Promise<Server> {
  const { db, queue, metrics } = options;
  const server = createServer(async (req, res) => {
    const path = req.url?.split('?')[0];
    if (req.method !== 'GET') return void res.writeHead(405).end();
    if (path === '/healthz') return void json(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const checks = {
        database: await settle(db.query('SELECT 1')),
        redis: await settle(queue.counts()),
      };
      const ready = checks.database === 'ok' && checks.redis === 'ok';
      return void json(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', checks });
    }
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(await metrics.registry.metrics());
      return;
    }
    json(res, 404, { status: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  return server;
}

function json(res: import('node:http').ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function settle(check: Promise<unknown>): Promise<'ok' | 'unavailable'> {
  try {
    await check;
    return 'ok';
  } catch {
    return 'unavailable';
  }
}
