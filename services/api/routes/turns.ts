import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { recordTurn, type TurnInput } from '../../core/sessions/turns.js';
import { IdempotencyHeaders } from '../schemas/idempotency.js';
import { problemResponses } from '../schemas/problem.js';
import { SessionParams, StoredTurnReply, turnBody } from '../schemas/sessions.js';

/** docs/design.md §6: a chatbot that runs its own LLM stores each finished turn here. */
export default async function turnRoutes(app: FastifyInstance) {
  const NewSessionBody = turnBody(app.config.MEMORY_MAX_QUESTION_CHARS, true);
  const Body = turnBody(app.config.MEMORY_MAX_QUESTION_CHARS, false);
  const common = {
    tags: ['turns'],
    security: [{ bearerAuth: [] }],
    headers: IdempotencyHeaders,
    response: { 201: StoredTurnReply, ...problemResponses(400, 401, 404, 409, 413, 415, 422, 503) },
  };
  // Photos arrive as base64 and are replaced before storage, so turn bodies get their own limit.
  const bodyLimit = app.config.MEMORY_TURN_BODY_LIMIT_BYTES;

  app.post(
    '/sessions/turns',
    {
      bodyLimit,
      schema: { ...common, summary: 'Store a turn in a new session', body: NewSessionBody },
    },
    async (request, reply) => {
      const { session_name: newSessionName, ...input } = request.body as TurnInput & { session_name?: string };
      return app.withIdempotency(request, reply, 201, () =>
        recordTurn(app.memoryApiDeps, request.identity, { newSessionName }, input));
    },
  );

  app.post(
    '/sessions/:id/turns',
    {
      bodyLimit,
      schema: { ...common, summary: 'Store a turn in a session', params: SessionParams, body: Body },
    },
    async (request, reply) => {
      const { id } = request.params as Static<typeof SessionParams>;
      return app.withIdempotency(request, reply, 201, () =>
        recordTurn(app.memoryApiDeps, request.identity, { sessionId: id }, request.body as TurnInput));
    },
  );
}
