import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import helmet from 'helmet';

/**
 * Security headers on every response (helmet's defaults: nosniff, HSTS, frame-ancestors, CSP, …).
 * Register it before the routes, the docs included: hooks apply to routes declared after them.
 *
 * The CSP is helmet's default, which Swagger UI at /docs works under: @fastify/swagger-ui serves its
 * scripts and styles as files from 'self' and needs no inline script (its csp.json lists no hashes).
 * `upgrade-insecure-requests` is dropped: the service is often reached over plain HTTP inside a
 * cluster, where upgrading /docs' assets to https would break the page.
 *
 * helmet's middleware is made once: @fastify/helmet made it anew on every request, parsing the
 * policy each time (docs/performance.md). A route that sends its own policy (the playground) sets it
 * over this one, as it did there.
 */
export default fp(
  async function securityHeaders(app: FastifyInstance) {
    const setHeaders = helmet({ contentSecurityPolicy: { directives: { 'upgrade-insecure-requests': null } } });
    app.addHook('onRequest', (request, reply, done) => {
      setHeaders(request.raw, reply.raw, (err?: unknown) => done(err as Error | undefined));
    });
  },
  { name: 'security-headers' },
);
