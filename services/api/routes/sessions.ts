import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import {
  clearUserSession,
  deleteUserSession,
  getUserSession,
  listUserSessions,
  renameUserSession,
} from '../../core/sessions/sessions.js';
import { problemResponses } from '../schemas/problem.js';
import { RenameSessionBody, Session, SessionListQuery, SessionPage, SessionParams, SessionWithTurns } from '../schemas/sessions.js';

const common = { tags: ['sessions'], security: [{ bearerAuth: [] }] };

/** docs/design.md §6 sessions: the caller's own, live sessions only (another user's or an expired one is 404). */
export default async function sessionRoutes(app: FastifyInstance) {
  app.get(
    '/sessions',
    {
      schema: {
        ...common,
        summary: 'List my sessions, most recently active first',
        querystring: SessionListQuery,
        response: { 200: SessionPage, ...problemResponses(400, 401) },
      },
    },
    async (request) => {
      const query = request.query as Static<typeof SessionListQuery>;
      return listUserSessions(app.memoryApiDeps, request.identity, query.limit, query.cursor);
    },
  );

  app.get(
    '/sessions/:id',
    {
      schema: {
        ...common,
        summary: 'A session with its stored turns',
        params: SessionParams,
        response: { 200: SessionWithTurns, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => getUserSession(app.memoryApiDeps, request.identity, (request.params as Static<typeof SessionParams>).id),
  );

  app.patch(
    '/sessions/:id',
    {
      schema: {
        ...common,
        summary: 'Rename a session',
        params: SessionParams,
        body: RenameSessionBody,
        response: { 200: Session, ...problemResponses(400, 401, 404, 413, 415) },
      },
    },
    async (request) => {
      const { id } = request.params as Static<typeof SessionParams>;
      const body = request.body as Static<typeof RenameSessionBody>;
      return renameUserSession(app.memoryApiDeps, request.identity, id, body.session_name.trim());
    },
  );

  app.delete(
    '/sessions/:id',
    {
      schema: {
        ...common,
        summary: 'Delete a session and its turns',
        params: SessionParams,
        response: { 204: { description: 'Deleted', type: 'null' }, ...problemResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      await deleteUserSession(app.memoryApiDeps, request.identity, (request.params as Static<typeof SessionParams>).id);
      return reply.status(204).send();
    },
  );

  app.post(
    '/sessions/:id/clear',
    {
      schema: {
        ...common,
        summary: 'Forget the turns (and summary and slots), keep the session',
        params: SessionParams,
        response: { 200: Session, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => clearUserSession(app.memoryApiDeps, request.identity, (request.params as Static<typeof SessionParams>).id),
  );
}
