import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROLE } from '../../core/gdpr/requests.js';
import { identifierParam } from '../identifier-param.js';
import { requireRole } from '../plugins/require-role.js';
import { AdminAuditQuery, AdminAuditResponse } from '../schemas/admin-audit.js';
import { problemResponses } from '../schemas/problem.js';

/** The access audit (docs/privacy.md#access-audit), for the admins of a tenant. */
const adminAuditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/audit',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        operationId: 'listAccessAudit',
        tags: ['admin'],
        summary: 'Who exported, erased, downloaded or read whose memory (memory-admin, own tenant)',
        description: 'Newest first, a page at a time; filter by user (subject or actor), action and time.',
        security: [{ bearerAuth: [] }],
        querystring: AdminAuditQuery,
        response: { 200: AdminAuditResponse, ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      const { user_id, action, from, to, limit, cursor } = request.query;
      const userId = user_id === undefined ? undefined : identifierParam(user_id, 'querystring.user_id');
      return app.memory.audit(request.identity, { userId, action, from, to, limit, cursor });
    },
  );
};

export default adminAuditRoutes;
