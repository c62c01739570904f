import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type pg from 'pg';
import client from 'prom-client';
import type { Metrics } from '../../core/metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics;
  }
}

/** Decorates `metrics`, times every request by route, and serves `GET /metrics` (Prometheus text). */
export default fp(
  async function metricsPlugin(app: FastifyInstance, { metrics, pool }: { metrics: Metrics; pool: pg.Pool }) {
    app.decorate('metrics', metrics);
    new client.Gauge({
      name: 'memorychat_db_pool_connections',
      help: 'Database pool connections by state',
      labelNames: ['state'],
      registers: [metrics.registry],
      collect() {
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'waiting' }, pool.waitingCount);
      },
    });

    app.addHook('onResponse', (request, reply, done) => {
      // The route pattern, never the raw URL, keeps label cardinality bounded.
      const route = request.routeOptions.url ?? 'unmatched';
      if (route !== '/metrics') {
        metrics.httpDuration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
      }
      done();
    });

    app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
      reply.type(metrics.registry.contentType);
      return metrics.registry.metrics();
    });
  },
  { name: 'metrics' },
);
