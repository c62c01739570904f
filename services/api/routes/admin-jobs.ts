import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROLE } from '../../core/gdpr/requests.js';
import { visibleToTenant } from '../../core/job-queue.js';
import { requireRole } from '../plugins/require-role.js';
import { AdminJobsResponse, FailedJobsQuery, FailedJobsResponse } from '../schemas/gdpr.js';
import { problemResponses } from '../schemas/problem.js';

/** Job status for admins: counts per state and the dead-letter view of failed jobs. */
const adminJobsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const security = [{ bearerAuth: [] }];

  app.get(
    '/admin/jobs',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        tags: ['admin'],
        operationId: 'getJobCounts',
        summary: 'Background job counts per state (memory-admin)',
        description:
          "The admin's own tenant's jobs and the system's (cleanup, re-embedding); completed and failed jobs as far as they are kept.",
        security,
        response: { 200: AdminJobsResponse, ...problemResponses(401, 403, 503) },
      },
    },
    async (request) => ({ mode: app.queue.mode, counts: await app.queue.tenantCounts(request.identity.tenantId) }),
  );

  app.get(
    '/admin/jobs/failed',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        tags: ['admin'],
        operationId: 'listFailedJobs',
        summary: 'Jobs that used up their attempts (memory-admin)',
        description: "System jobs (cleanup, re-embedding) and the admin's own tenant's jobs, newest first.",
        security,
        querystring: FailedJobsQuery,
        response: { 200: FailedJobsResponse, ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      const { limit } = request.query;
      const tenant = request.identity.tenantId;
      const failed = await app.queue.failed(limit);
      return {
        jobs: failed
          .filter((job) => visibleToTenant(job.data, tenant))
          .map((job) => ({
            id: job.id,
            kind: job.kind,
            data: job.data,
            failed_reason: job.failedReason,
            attempts_made: job.attemptsMade,
            failed_at: job.failedAt,
          })),
      };
    },
  );
};

export default adminJobsRoutes;
