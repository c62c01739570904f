import Type from 'typebox';
import type { FastifyInstance } from 'fastify';

const Health = Type.Object({ status: Type.String(), checks: Type.Optional(Type.Record(Type.String(), Type.String())) });

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
        summary: 'The database answers',
        response: { 200: Health, 503: Health },
      },
    },
    async (_request, reply) => {
      try {
        await app.db.query('SELECT 1');
        return { status: 'ready', checks: { database: 'ok' } };
      } catch {
        return reply.status(503).send({ status: 'not ready', checks: { database: 'unavailable' } });
      }
    },
  );
}
