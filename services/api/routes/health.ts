import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';

const Health = Type.Object({ status: Type.String(), checks: Type.Optional(Type.Record(Type.String(), Type.String())) });
const CHECK_TIMEOUT_MS = 2000;

const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: { tags: ['operations'], operationId: 'getHealth', summary: 'The process is up', security: [], response: { 200: Health } },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        tags: ['operations'],
        operationId: 'getReadiness',
        summary: 'Ready when the database answers; reports Redis too (REDIS_URL set)',
        security: [],
        description:
          'Redis down leaves the service ready, with status "degraded": requests are served and their jobs wait ' +
          'in Postgres until Redis is back. Without the database nothing can be served: 503.',
        response: { 200: Health, 503: Health },
      },
    },
    async (_request, reply) => {
      const checks: Record<string, string> = {
        database: await probe(() => app.db.asMaintenance().query('SELECT 1')),
        ...(app.queue.mode === 'bullmq' ? { redis: await probe(() => app.queue.counts()) } : {}),
      };
      // A shared Redis outage must not take every replica out of rotation: the API serves without it.
      const ready = checks.database === 'ok';
      const status = !ready ? 'not ready' : Object.values(checks).every((c) => c === 'ok') ? 'ready' : 'degraded';
      return reply.status(ready ? 200 : 503).send({ status, checks });
    },
  );
};

export default healthRoutes;

async function probe(check: () => Promise<unknown>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([check(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS)))]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}
