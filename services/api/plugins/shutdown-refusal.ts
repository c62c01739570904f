import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from '../../model/errors.js';

/**
 * Graceful shutdown (docs/soak.md): once `app.close()` starts (SIGTERM), requests already running
 * finish with their normal response; a request that still arrives on an open keep-alive connection
 * is refused with a 503 `shutting-down` problem before anything runs, so the client may retry it
 * elsewhere. Every response from then on closes its connection, so the listener drains instead of
 * waiting for idle keep-alive sockets. New connections are refused by the closed listener itself.
 * Fastify's own `return503OnClosing` is off (app.ts): it answers plain JSON, not a problem.
 */
export default fp(
  async function shutdownRefusal(app: FastifyInstance) {
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    // Callback hooks, not async ones: every request passes them, and an async hook costs a promise each.
    app.addHook('onRequest', (_request, reply, done) => {
      if (!closing) return done();
      reply.header('connection', 'close').header('retry-after', '1');
      done(new AppError('shutting-down', 'the service is shutting down; retry the request'));
    });
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (closing) reply.header('connection', 'close');
      done(null, payload);
    });
  },
  { name: 'shutdown-refusal', dependencies: ['problem-errors'] },
);
