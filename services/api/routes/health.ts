import Type from 'typebox';
import type { FastifyInstance } from 'fastify';

const Health = Type.Object({ status: Type.String(), checks: Type.Optional(Type.Record(Type.String(), Type.String())) });
const CHECK_TIMEOUT_MS = 2000;

export default async function healthRoutes(app: FastifyInstance) {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: { tags: ['operations'], summary: 'The process is up', response: { 200: Health } },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        tags: ['operations'],
        summary: 'The database answers (and Redis, when REDIS_URL is set)',
        response: { 200: Health, 503: Health },
      },
    },
    async (_request, reply) => {
      const checks: Record<string, string> = {
        database: await probe(() => app.db.query('SELECT 1')),
        ...(app.queue.mode === 'bullmq' ? { redis: await probe(() => app.queue.counts()) } : {}),
      };
      const ready = Object.values(checks).every((c) => c === 'ok');
      return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
    },
  );
}

async function probe(check: () => Promise<unknown>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS))),
    ]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}
