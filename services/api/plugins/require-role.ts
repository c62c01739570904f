import type { FastifyRequest } from 'fastify';
import { AppError } from '../../model/errors.js';

/**
 * A preHandler allowing only tokens with `role` (e.g. `memory-admin`). The token's tenant still
 * bounds what the route touches, so an admin acts only within their own tenant.
 */
export function requireRole(role: string) {
  return async function checkRole(request: FastifyRequest) {
    if (!request.identity?.roles.includes(role)) {
      throw new AppError('forbidden', `this route needs the "${role}" role`);
    }
  };
}
