import Type from 'typebox';
import type { Config } from '../../config/config.js';
import { memoryContextBody } from '../schemas/memory-context.js';
import { SessionParams } from '../schemas/sessions.js';
import type { McpTool } from './mcp-tool.js';

/** `POST /memory/context` as a tool: what memory holds for the next question of a session (format `text`). */
export function sessionContextTool(config: Config) {
  const body = memoryContextBody(config.MEMORY_MAX_QUESTION_CHARS).properties;
  const ContextArguments = Type.Object({
    question: body.question,
    session_id: body.session_id,
    session_key: body.session_key,
    max_tokens: body.max_tokens,
    k: body.k,
    memory_scope: body.memory_scope,
    vdp_database_names: body.vdp_database_names,
    vdp_tag_names: body.vdp_tag_names,
  });
  const tool: McpTool<typeof ContextArguments> = {
    name: 'get_session_context',
    title: "Get a session's memory context",
    operationId: 'getMemoryContext',
    description:
      "The memory of a conversation for the question about to be asked: the session's summary, its recent questions with " +
      "their SQL and answers, and the user's similar past questions, as one text block within a token budget. Nothing is " +
      'stored and nothing is sent to the answering backend.',
    arguments: ContextArguments,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run(memory, caller, args) {
      const reply = await memory.context(caller.identity, {
        question: args.question,
        sessionId: args.session_id,
        sessionKey: args.session_key,
        format: 'text',
        maxTokens: args.max_tokens,
        k: args.k,
        memoryScope: args.memory_scope,
        vdpDatabaseNames: args.vdp_database_names,
        vdpTagNames: args.vdp_tag_names,
        upstreamAuthorization: caller.upstreamAuthorization,
      });
      return { text: reply.context_text || 'Memory holds nothing for this question yet.', data: reply };
    },
  };
  return tool;
}

const ForgetArguments = Type.Object({ session_id: SessionParams.properties.id });

/** `DELETE /sessions/{id}` as a tool. */
export const forgetSessionTool: McpTool<typeof ForgetArguments> = {
  name: 'forget_session',
  title: 'Forget a session',
  operationId: 'deleteSession',
  description:
    'Delete a conversation and every turn of it: its questions, answers and SQL are no longer recalled or shown. Other ' +
    'conversations are kept.',
  arguments: ForgetArguments,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(memory, caller, args) {
    await memory.sessions.remove(caller.identity, args.session_id);
    return { text: `Session ${args.session_id} and its turns are deleted.`, data: { session_id: args.session_id, deleted: true } };
  },
};
