import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROLE } from '../../core/gdpr/requests.js';
import { AppError } from '../../model/errors.js';
import { requireRole } from '../plugins/require-role.js';
import { ApiKey, ApiKeyList, ApiKeyParams, CreatedApiKey, NewApiKeyBody } from '../schemas/api-keys.js';
import { problemResponses } from '../schemas/problem.js';

const common = { tags: ['admin'], security: [{ bearerAuth: [] }] };

/** Service credentials for bots (docs/api-keys.md), managed by a tenant's admins, for that tenant only. */
const adminApiKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/admin/api-keys',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        ...common,
        operationId: 'createApiKey',
        summary: 'Create an API key for a bot (memory-admin, own tenant)',
        description: 'The answer carries the key itself, this once; the service keeps only its hash.',
        body: NewApiKeyBody,
        response: { 201: CreatedApiKey, ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request, reply) => {
      const unknown = (request.body.routes ?? []).flatMap((route, i) => (app.operationIds.has(route) ? [] : [i]));
      if (unknown.length) {
        throw new AppError('validation-failed', 'routes must name operationIds of this service', {
          errors: unknown.map((i) => ({ field: `/routes/${i}`, message: 'not an operationId of this service' })),
        });
      }
      return reply.status(201).send(await app.memory.apiKeys.create(request.identity, request.body));
    },
  );

  app.get(
    '/admin/api-keys',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        ...common,
        operationId: 'listApiKeys',
        summary: "The tenant's API keys, without their secrets (memory-admin)",
        response: { 200: ApiKeyList, ...problemResponses(401, 403, 503) },
      },
    },
    async (request) => app.memory.apiKeys.list(request.identity),
  );

  app.delete(
    '/admin/api-keys/:key_id',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        ...common,
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key (memory-admin, own tenant)',
        description: 'Requests with the key are refused from now on; the key stays listed with its revoked_at.',
        params: ApiKeyParams,
        response: { 200: ApiKey, ...problemResponses(401, 403, 404, 503) },
      },
    },
    async (request) => app.memory.apiKeys.revoke(request.identity, request.params.key_id),
  );
};

export default adminApiKeyRoutes;
