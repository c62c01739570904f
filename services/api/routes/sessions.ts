import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { problemResponses } from '../schemas/problem.js';
import { RenameSessionBody, Session, SessionListQuery, SessionPage, SessionParams, SessionWithTurns } from '../schemas/sessions.js';

const common = { tags: ['sessions'], security: [{ bearerAuth: [] }] };

/** docs/design.md §6 sessions: the caller's own, live sessions only (another user's or an expired one is 404). */
const sessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { sessions } = app.memory;

  app.get(
    '/sessions',
    {
      schema: {
        ...common,
        operationId: 'listSessions',
        summary: 'List my sessions, most recently active first (or the one with a session key)',
        querystring: SessionListQuery,
        response: { 200: SessionPage, ...problemResponses(400, 401) },
      },
    },
    async (request) => sessions.list(request.identity, request.query.limit, request.query.cursor, request.query.key),
  );

  app.get(
    '/sessions/:id',
    {
      schema: {
        ...common,
        operationId: 'getSession',
        summary: 'A session with its stored turns',
        params: SessionParams,
        response: { 200: SessionWithTurns, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => sessions.get(request.identity, request.params.id),
  );

  app.patch(
    '/sessions/:id',
    {
      schema: {
        ...common,
        operationId: 'renameSession',
        summary: 'Rename a session, or set the memory scope it keeps',
        params: SessionParams,
        body: RenameSessionBody,
        response: { 200: Session, ...problemResponses(400, 401, 404, 413, 415) },
      },
    },
    async (request) =>
      sessions.update(request.identity, request.params.id, {
        ...(request.body.session_name === undefined ? {} : { name: request.body.session_name.trim() }),
        ...(request.body.memory_scope === undefined ? {} : { memoryScope: request.body.memory_scope }),
      }),
  );

  app.delete(
    '/sessions/:id',
    {
      schema: {
        ...common,
        operationId: 'deleteSession',
        summary: 'Delete a session and its turns',
        params: SessionParams,
        response: { 204: { description: 'Deleted', type: 'null' }, ...problemResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      await sessions.remove(request.identity, request.params.id);
      // A handler that returns nothing sends no body, as a 204 must.
      reply.status(204);
    },
  );

  app.post(
    '/sessions/:id/clear',
    {
      schema: {
        ...common,
        operationId: 'clearSession',
        summary: 'Forget the turns (and summary and slots), keep the session',
        params: SessionParams,
        response: { 200: Session, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => sessions.clear(request.identity, request.params.id),
  );
};

export default sessionRoutes;
