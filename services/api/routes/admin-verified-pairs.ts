import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ADMIN_ROLE } from '../../core/gdpr/requests.js';
import { identifierParam } from '../identifier-param.js';
import { requireRole } from '../plugins/require-role.js';
import { problemResponses } from '../schemas/problem.js';
import {
  EditPairBody,
  PairListQuery,
  PairParams,
  PromotedPair,
  PromotePairBody,
  TenantSettingsBody,
  VerifiedPair,
  VerifiedPairList,
} from '../schemas/verified-pairs.js';

const common = { tags: ['admin'], security: [{ bearerAuth: [] }] };

/** The tenant's verified question/SQL pairs and its settings (docs/verified-pairs.md), for its admins only. */
const adminVerifiedPairRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/admin/verified-pairs',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        ...common,
        operationId: 'promoteVerifiedPair',
        summary: "Promote a user's answered turn to a verified pair of the tenant (memory-admin)",
        description:
          'The turn keeps its question (masked as stored), SQL, views and databases, not its rows. 201 with the new pair; 200 with the live pair a turn promoted before already has.',
        body: PromotePairBody,
        response: { 200: PromotedPair, 201: PromotedPair, ...problemResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request, reply) => {
      const { user_id, session_id, turn_number } = request.body;
      const promoted = await app.memory.pairs.promote(
        request.identity,
        { userId: identifierParam(user_id, 'body.user_id'), sessionId: session_id, turnNumber: turn_number },
        { httpRequestId: request.id },
      );
      return reply.status(promoted.created ? 201 : 200).send(promoted);
    },
  );

  app.get(
    '/admin/verified-pairs',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        ...common,
        operationId: 'listVerifiedPairs',
        summary: "The tenant's verified pairs, with the negative feedback on each (memory-admin)",
        querystring: PairListQuery,
        response: { 200: VerifiedPairList, ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => app.memory.pairs.list(request.identity, request.query),
  );

  app.patch(
    '/admin/verified-pairs/:pair_id',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        ...common,
        operationId: 'editVerifiedPair',
        summary: "Correct a verified pair's SQL or rewrite its question (memory-admin)",
        params: PairParams,
        body: EditPairBody,
        response: { 200: VerifiedPair, ...problemResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request) => app.memory.pairs.edit(request.identity, request.params.pair_id, request.body, { httpRequestId: request.id }),
  );

  for (const [mark, verb, summary] of [
    ['retired', 'retire', 'Retire a verified pair: it is recalled no more, and stays listed (memory-admin)'],
    ['adopted', 'adopt', "Adopt a verified pair as the tenant's own: it outlives its author's erasure, without the author (memory-admin)"],
  ] as const) {
    app.post(
      `/admin/verified-pairs/:pair_id/${verb}`,
      {
        preHandler: requireRole(ADMIN_ROLE),
        schema: {
          ...common,
          operationId: `${verb}VerifiedPair`,
          summary,
          params: PairParams,
          response: { 200: VerifiedPair, ...problemResponses(400, 401, 403, 404, 503) },
        },
      },
      async (request) => app.memory.pairs.mark(request.identity, request.params.pair_id, mark, { httpRequestId: request.id }),
    );
  }

  app.get(
    '/admin/settings',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        ...common,
        operationId: 'getTenantSettings',
        summary: "The tenant's settings (memory-admin)",
        response: { 200: TenantSettingsBody, ...problemResponses(401, 403, 503) },
      },
    },
    async (request) => app.memory.tenantSettings.get(request.identity),
  );

  app.put(
    '/admin/settings',
    {
      preHandler: requireRole(ADMIN_ROLE),
      schema: {
        ...common,
        operationId: 'updateTenantSettings',
        summary: "Change the tenant's settings (memory-admin)",
        body: TenantSettingsBody,
        response: { 200: TenantSettingsBody, ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => app.memory.tenantSettings.set(request.identity, request.body, { httpRequestId: request.id }),
  );
};

export default adminVerifiedPairRoutes;
