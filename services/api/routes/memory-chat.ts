import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MemoryChatHeaders, MemoryChatResponse, memoryChatBody } from '../schemas/memory-chat.js';
import { problemResponses } from '../schemas/problem.js';

const MEMORY_FIELDS = new Set(['question', 'session_id', 'session_name', 'use_memory', 'max_history_messages', 'semantic_search_k']);

const memoryChatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { memory } = app;
  const Body = memoryChatBody(app.config.MEMORY_MAX_QUESTION_CHARS);

  app.post(
    '/memoryChat',
    {
      schema: {
        tags: ['memoryChat'],
        summary: 'Ask a question with conversation memory',
        description:
          "Resolves the conversation's recent turns and the user's similar past questions, sends the " +
          'augmented request to the answering backend, stores the turn, and returns the answer with memory metadata.',
        security: [{ bearerAuth: [] }],
        body: Body,
        headers: MemoryChatHeaders,
        response: { 200: MemoryChatResponse, ...problemResponses(400, 401, 404, 409, 413, 415, 422, 502, 503, 504) },
      },
    },
    async (request, reply) =>
      app.withIdempotency(request, reply, 200, async (claim) => {
        const { body } = request;
        const params = Object.fromEntries(Object.entries(body).filter(([key]) => !MEMORY_FIELDS.has(key)));
        return memory.chat({
          identity: request.identity,
          question: body.question,
          sessionId: body.session_id,
          sessionName: body.session_name,
          useMemory: body.use_memory ?? true,
          maxHistoryTurns: body.max_history_messages,
          semanticSearchK: body.semantic_search_k,
          params,
          upstreamAuthorization: request.headers['x-upstream-authorization'],
          idempotency: claim,
        });
      }),
  );
};

export default memoryChatRoutes;
