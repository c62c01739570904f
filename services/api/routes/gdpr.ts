import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { ADMIN_ROLE, describeRequest } from '../../core/gdpr/requests.js';
import type { GdprAction } from '../../model/gdpr.js';
import { identifierParam } from '../identifier-param.js';
import { requireRole } from '../plugins/require-role.js';
import { AdminUserParams, GdprExportDocument, GdprRequestParams, GdprRequestStatus } from '../schemas/gdpr.js';
import { problemResponses } from '../schemas/problem.js';

const security = [{ bearerAuth: [] }];
/** RFC 9745: when `GET /me/export` was deprecated (2026-11-25), as a structured-field date. */
const GET_EXPORT_DEPRECATED = `@${Date.UTC(2026, 10, 25) / 1000}`;

/** GDPR export and erasure (docs/design.md §7): queued, answered 202 with a request id, audited. */
const gdprRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { gdpr } = app.memory;
  // A request not yet finished says when to poll it again: polls that often spend at most half of the
  // caller's RATE_LIMIT_PER_MINUTE, so a long export's polls cannot leave its download, or the user's
  // questions, refused 429 (a client polling every 50 ms was, within seconds).
  const pollAfterSeconds = String(Math.ceil(120 / (app.config.RATE_LIMIT_PER_MINUTE || 120)));
  const described = (reply: FastifyReply, row: Parameters<typeof describeRequest>[0]) => {
    const status = describeRequest(row);
    if (status.status === 'queued' || status.status === 'running') reply.header('retry-after', pollAfterSeconds);
    return status;
  };
  const accept = async (request: FastifyRequest, reply: FastifyReply, subject: string, action: GdprAction) => {
    const row = await gdpr.request(request.identity, subject, action, { httpRequestId: request.id });
    return reply.status(202).header('location', `/gdpr/requests/${row.request_id}`).send(described(reply, row));
  };
  const accepted = { 202: GdprRequestStatus };

  app.post(
    '/me/export',
    {
      schema: {
        tags: ['gdpr'],
        operationId: 'exportMyData',
        summary: 'Export all my data',
        description: 'Queues an export of every live session and turn of the caller; poll the status, then download it.',
        security,
        response: { ...accepted, ...problemResponses(401, 503) },
      },
    },
    (request, reply) => accept(request, reply, request.identity.userId, 'export'),
  );

  // Kept for one release: clients written against it keep working, and learn of the change from the
  // header. A GET should not create anything (a prefetching browser or a retrying client would queue
  // exports), which is why POST replaces it.
  app.get(
    '/me/export',
    {
      schema: {
        tags: ['gdpr'],
        operationId: 'exportMyDataByGet',
        summary: 'Export all my data (deprecated: use POST /me/export)',
        description: 'Queues an export as POST /me/export does and answers with a `Deprecation` header; it will be removed.',
        deprecated: true,
        security,
        response: { ...accepted, ...problemResponses(401, 503) },
      },
    },
    (request, reply) => {
      reply.header('deprecation', GET_EXPORT_DEPRECATED).header('link', '</me/export>; rel="successor-version"');
      return accept(request, reply, request.identity.userId, 'export');
    },
  );

  app.delete(
    '/me',
    {
      schema: {
        tags: ['gdpr'],
        operationId: 'eraseMyData',
        summary: 'Erase all my data',
        description:
          'Queues the erasure of every session, turn, summary, embedding, export and queued job of the caller. While one is queued or running, answers with that one; at most GDPR_ERASE_REQUESTS_PER_HOUR new ones an hour (429).',
        security,
        response: { ...accepted, ...problemResponses(401, 429, 503) },
      },
    },
    (request, reply) => accept(request, reply, request.identity.userId, 'erase'),
  );

  app.post(
    '/admin/users/:user_id/export',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        tags: ['gdpr', 'admin'],
        operationId: 'exportUserData',
        summary: "Export a user's data (memory-admin, same tenant)",
        security,
        params: AdminUserParams,
        response: { ...accepted, ...problemResponses(400, 401, 403, 503) },
      },
    },
    (request, reply) => accept(request, reply, identifierParam(request.params.user_id, 'params.user_id'), 'export'),
  );

  app.delete(
    '/admin/users/:user_id',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        tags: ['gdpr', 'admin'],
        operationId: 'eraseUserData',
        summary: "Erase a user's data (memory-admin, same tenant)",
        description:
          'While an erasure of the user is queued or running, answers with that one; at most GDPR_ERASE_REQUESTS_PER_HOUR new ones an hour per user and per admin (429).',
        security,
        params: AdminUserParams,
        response: { ...accepted, ...problemResponses(400, 401, 403, 429, 503) },
      },
    },
    (request, reply) => accept(request, reply, identifierParam(request.params.user_id, 'params.user_id'), 'erase'),
  );

  app.get(
    '/gdpr/requests/:id',
    {
      schema: {
        tags: ['gdpr'],
        operationId: 'getGdprRequest',
        summary: 'Status of a GDPR request',
        description:
          "Visible to the subject, the requester and admins of the tenant; to anyone else it does not exist. While it is queued or running, Retry-After says how many seconds to wait before polling again: at that pace the polls spend at most half of the caller's requests a minute (RATE_LIMIT_PER_MINUTE).",
        security,
        params: GdprRequestParams,
        response: { 200: GdprRequestStatus, ...problemResponses(400, 401, 404) },
      },
    },
    async (request, reply) => described(reply, await gdpr.find(request.identity, request.params.id, { httpRequestId: request.id })),
  );

  app.get(
    '/gdpr/requests/:id/download',
    {
      schema: {
        tags: ['gdpr'],
        operationId: 'downloadGdprExport',
        summary: 'Download a finished export (JSON)',
        description: 'Authenticated: the subject or an admin of the tenant. Available until GDPR_EXPORT_TTL after it finished.',
        security,
        params: GdprRequestParams,
        // The document's schema, streamed as the JSON text it was stored as.
        response: { 200: Type.Unsafe<Readable>(GdprExportDocument), ...problemResponses(400, 401, 404, 409, 410) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const parts = await gdpr.download(request.identity, id, { httpRequestId: request.id });
      // The stored document is streamed as is, part by part: re-serialising a large export would hold it whole.
      return reply
        .type('application/json')
        .header('content-disposition', `attachment; filename="memorychat-export-${id}.json"`)
        .header('cache-control', 'no-store')
        .send(Readable.from(parts));
    },
  );
};

export default gdprRoutes;
