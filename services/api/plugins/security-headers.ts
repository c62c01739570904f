import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Security headers on every response (helmet's defaults: nosniff, HSTS, frame-ancestors, CSP, …).
 * Register it before the routes, the docs included: hooks apply to routes declared after them.
 *
 * The CSP is helmet's default, which Swagger UI at /docs works under: @fastify/swagger-ui serves its
 * scripts and styles as files from 'self' and needs no inline script (its csp.json lists no hashes).
 * `upgrade-insecure-requests` is dropped: the service is often reached over plain HTTP inside a
 * cluster, where upgrading /docs' assets to https would break the page.
 */
export default fp(
  async function securityHeaders(app: FastifyInstance) {
    await app.register(helmet, {
      global: true,
      contentSecurityPolicy: {
        directives: {
          'upgrade-insecure-requests': null,
        },
      },
    });
  },
  { name: 'security-headers' },
);
