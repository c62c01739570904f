import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MemoryContextReply, MemorySearchBody, MemorySearchReply, memoryContextBody } from '../schemas/memory-context.js';
import { problemResponses } from '../schemas/problem.js';
import { ViewPermissionsHeaders } from '../schemas/view-permissions.js';
import { upstreamAuthorizationOf } from '../upstream-credentials.js';

/** docs/design.md §6: context for a new question, and search over the caller's turns. Nothing is stored. */
const memoryContextRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { memory } = app;
  const ContextBody = memoryContextBody(app.config.MEMORY_MAX_QUESTION_CHARS);

  app.post(
    '/memory/context',
    {
      schema: {
        tags: ['memory'],
        operationId: 'getMemoryContext',
        summary: 'Context for a new question (summary, history, related memories, slots)',
        security: [{ bearerAuth: [] }],
        headers: ViewPermissionsHeaders,
        body: ContextBody,
        response: { 200: MemoryContextReply, ...problemResponses(400, 401, 404, 413, 415) },
      },
    },
    async (request) => {
      const body = request.body;
      return memory.context(request.identity, {
        question: body.question,
        sessionId: body.session_id,
        sessionKey: body.session_key,
        format: body.format,
        maxTokens: body.max_tokens,
        k: body.k,
        vdpDatabaseNames: body.vdp_database_names,
        vdpTagNames: body.vdp_tag_names,
        memoryScope: body.memory_scope,
        upstreamAuthorization: upstreamAuthorizationOf(request),
      });
    },
  );

  app.post(
    '/memory/search',
    {
      schema: {
        tags: ['memory'],
        operationId: 'searchMemory',
        summary: 'My turns that best match a query',
        description:
          "Hybrid search over the caller's own turns: the nearest by embedding and the best lexical matches (question, SQL tables and columns) fused by reciprocal rank. `min_similarity` is a floor on the cosine that a lexical match passes. With an upstream Denodo AI SDK, turns over a view the caller may not read now are left out (`left_out_unreadable`).",
        security: [{ bearerAuth: [] }],
        headers: ViewPermissionsHeaders,
        body: MemorySearchBody,
        response: { 200: MemorySearchReply, ...problemResponses(400, 401, 404, 413, 415, 503) },
      },
    },
    async (request) => {
      const body = request.body;
      return memory.search(request.identity, {
        query: body.query,
        k: body.k,
        sessionId: body.session_id,
        vdpDatabaseNames: body.vdp_database_names,
        vdpTagNames: body.vdp_tag_names,
        minSimilarity: body.min_similarity,
        upstreamAuthorization: upstreamAuthorizationOf(request),
      });
    },
  );
};

export default memoryContextRoutes;
