import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { IdempotencyHeaders } from '../schemas/idempotency.js';
import { problemResponses } from '../schemas/problem.js';
import { newSessionTurnBody, SessionParams, StoredTurnReply, turnBody } from '../schemas/sessions.js';

/** docs/design.md §6: a chatbot that runs its own LLM stores each finished turn here. */
const turnRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { turns } = app.memory;
  const NewSessionBody = newSessionTurnBody(app.config.MEMORY_MAX_QUESTION_CHARS);
  const Body = turnBody(app.config.MEMORY_MAX_QUESTION_CHARS);
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
      schema: {
        ...common,
        operationId: 'storeTurnInNewSession',
        summary: 'Store a turn in a new session, or in the session with a session_key',
        body: NewSessionBody,
      },
    },
    async (request, reply) => {
      const { session_name: newSessionName, session_key: sessionKey, ...input } = request.body;
      return app.withIdempotency(request, reply, 201, (claim) =>
        turns.store(request.identity, sessionKey === undefined ? { newSessionName } : { sessionKey, newSessionName }, input, claim),
      );
    },
  );

  app.post(
    '/sessions/:id/turns',
    {
      bodyLimit,
      schema: { ...common, operationId: 'storeTurn', summary: 'Store a turn in a session', params: SessionParams, body: Body },
    },
    async (request, reply) => {
      return app.withIdempotency(request, reply, 201, (claim) =>
        turns.store(request.identity, { sessionId: request.params.id }, request.body, claim),
      );
    },
  );
};

export default turnRoutes;
