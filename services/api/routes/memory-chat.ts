import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ClientGoneError } from '../../core/chat/chat-request.js';
import { openEventStream, wantsEventStream } from '../event-stream.js';
import { MemoryChatEventStream, MemoryChatHeaders, MemoryChatResponse, memoryChatBody } from '../schemas/memory-chat.js';
import { problemResponses } from '../schemas/problem.js';
import { upstreamAuthorizationOf } from '../upstream-credentials.js';

const MEMORY_FIELDS = new Set([
  'question',
  'session_id',
  'session_key',
  'session_name',
  'use_memory',
  'memory_commands',
  'max_history_messages',
  'semantic_search_k',
  'memory_scope',
]);

const memoryChatRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { memory } = app;
  const Body = memoryChatBody(app.config.MEMORY_MAX_QUESTION_CHARS);
  const commandsOn = app.config.MEMORY_COMMANDS === 'on';

  app.post(
    '/memoryChat',
    {
      schema: {
        tags: ['memoryChat'],
        operationId: 'memoryChat',
        summary: 'Ask a question with conversation memory',
        description:
          "Resolves the conversation's recent turns and the user's similar past questions, sends the " +
          'augmented request to the answering backend, stores the turn, and returns the answer with memory metadata. ' +
          'Memory commands ("show me the SQL for the first question", "export that as CSV", "/clear", "what did I ask before?") ' +
          'are answered from memory instead. With `Accept: text/event-stream` the reply is streamed as Server-Sent Events.',
        security: [{ bearerAuth: [] }],
        body: Body,
        headers: MemoryChatHeaders,
        response: {
          200: {
            content: {
              'application/json': { schema: MemoryChatResponse },
              'text/event-stream': { schema: MemoryChatEventStream },
            },
          },
          ...problemResponses(400, 401, 404, 409, 413, 415, 422, 502, 503, 504),
        },
      },
    },
    async (request, reply) => {
      const { body } = request;
      const clientGone = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableEnded) clientGone.abort();
      });
      const params = Object.fromEntries(Object.entries(body).filter(([key]) => !MEMORY_FIELDS.has(key)));
      const chat = (claim: Parameters<typeof memory.chat>[0]['idempotency'], stream?: Parameters<typeof memory.chat>[1]) =>
        memory.chat(
          {
            identity: request.identity,
            question: body.question,
            sessionId: body.session_id,
            sessionKey: body.session_key,
            sessionName: body.session_name,
            useMemory: body.use_memory ?? true,
            memoryCommands: commandsOn && (body.memory_commands ?? true),
            maxHistoryTurns: body.max_history_messages,
            semanticSearchK: body.semantic_search_k,
            memoryScope: body.memory_scope,
            params,
            upstreamAuthorization: upstreamAuthorizationOf(request),
            requestId: request.id,
            clientGone: clientGone.signal,
            idempotency: claim,
          },
          stream,
        );
      if (!wantsEventStream(request)) return app.withIdempotency(request, reply, 200, (claim) => chat(claim));

      const events = openEventStream(request, reply);
      try {
        const response = await app.runIdempotent(request, reply, 200, (claim) => chat(claim, events.stream));
        if (response.replayed) {
          const stored = response.body as { answer?: string; conversation_metadata?: { conversation_id?: string } } & Record<
            string,
            unknown
          >;
          events.stream.memory({
            conversation_id: stored.conversation_metadata?.conversation_id,
            memory_context_used: stored.memory_context_used,
            memory_retrieval_time: stored.memory_retrieval_time,
          });
          events.stream.text(String(stored.answer ?? ''));
        }
        events.finish(response.body);
      } catch (err) {
        if (err instanceof ClientGoneError || events.stream.signal.aborted) {
          request.log.info('the client of a streamed reply went away; its turn is stored as incomplete');
          return reply;
        }
        if (!events.started) throw err;
        events.fail(err);
      }
      return reply;
    },
  );
};

export default memoryChatRoutes;
