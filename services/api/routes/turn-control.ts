import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../schemas/problem.js';
import { CorrectedTurnReply, FeedbackBody, FeedbackReply, TurnParams, TurnPatchBody } from '../schemas/sessions.js';

const common = { tags: ['turns'], security: [{ bearerAuth: [] }], params: TurnParams };

/** docs/chat-native.md: correct, delete or rate one turn of the caller's live session. */
const turnControlRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { turns } = app.memory;

  app.patch(
    '/sessions/:id/turns/:n',
    {
      schema: {
        ...common,
        operationId: 'correctTurn',
        summary: "Correct a turn's SQL, answer or status (re-embedded, dedup re-checked, rating cleared)",
        body: TurnPatchBody,
        response: { 200: CorrectedTurnReply, ...problemResponses(400, 401, 404, 413, 415) },
      },
    },
    async (request) => turns.correct(request.identity, request.params.id, request.params.n, request.body),
  );

  app.delete(
    '/sessions/:id/turns/:n',
    {
      schema: {
        ...common,
        operationId: 'deleteTurn',
        summary: 'Delete one turn (the other turns keep their numbers)',
        response: { 204: { description: 'Deleted', type: 'null' }, ...problemResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      await turns.remove(request.identity, request.params.id, request.params.n);
      reply.status(204);
    },
  );

  app.post(
    '/sessions/:id/turns/:n/feedback',
    {
      schema: {
        ...common,
        operationId: 'rateTurn',
        summary: 'Rate a turn up or down (a down-rated turn steers no later SQL until corrected)',
        body: FeedbackBody,
        response: { 200: FeedbackReply, ...problemResponses(400, 401, 404, 413, 415) },
      },
    },
    async (request) => turns.rate(request.identity, request.params.id, request.params.n, request.body),
  );
};

export default turnControlRoutes;
