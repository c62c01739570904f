import type { FastifyRequest } from 'fastify';
import type { Config } from '../config/config.js';

/**
 * pino options: JSON logs without credentials, prompts or SQL. Requests are logged by route
 * pattern, not URL: paths carry user ids (`/admin/users/{user_id}`) and query strings carry
 * question keywords (`/sessions/{id}/sql?q=…`).
 */
export function loggerOptions(config: Config) {
  return {
    level: config.LOG_LEVEL,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-upstream-authorization"]',
        'req.headers.cookie',
        '*.apiKey',
        '*.password',
        '*.token',
      ],
      censor: '[redacted]',
    },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        route: request.routeOptions?.url ?? 'unmatched',
        remoteAddress: request.ip,
      }),
    },
  };
}
