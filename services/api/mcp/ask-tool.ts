import Type from 'typebox';
import type { Config } from '../../config/config.js';
import { memoryChatBody } from '../schemas/memory-chat.js';
import { type McpTool, tagged } from './mcp-tool.js';

/**
 * `POST /memoryChat` as a tool: the question goes to the answerer (the Denodo AI SDK) with the
 * session's turns and the user's similar past questions, and the turn is stored. Memory commands are
 * off: an agent has the recall tools for "show me the SQL", and its question goes to the answerer as
 * asked. Without an Idempotency-Key (MCP has none), a retried call stores a second turn.
 */
export function askTool(config: Config) {
  const body = memoryChatBody(config.MEMORY_MAX_QUESTION_CHARS).properties;
  const AskArguments = Type.Object({
    question: body.question,
    session_id: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'The session_id of an earlier answer, to ask a follow-up in that conversation ("What about 2023?"); omit it to start one',
      }),
    ),
    session_key: body.session_key,
    memory_scope: body.memory_scope,
    vdp_database_names: body.vdp_database_names,
    vdp_tag_names: body.vdp_tag_names,
  });

  const tool: McpTool<typeof AskArguments> = {
    name: 'ask_data_question',
    title: 'Ask a data question, with memory',
    operationId: 'memoryChat',
    description:
      'Ask a question about the data in natural language, as the user. The answering backend (the Denodo AI SDK) writes and runs ' +
      "the SQL with the user's own permissions; memorychat gives it the conversation so far and the user's similar past " +
      'questions with their SQL, so a follow-up such as "What about 2023?" is understood. Returns the answer, the SQL and a ' +
      'session_id: pass it back to ask a follow-up in the same conversation.',
    arguments: AskArguments,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    async run(memory, caller, args) {
      const forwarded = { vdp_database_names: args.vdp_database_names, vdp_tag_names: args.vdp_tag_names };
      const reply = await memory.chat({
        identity: caller.identity,
        question: args.question,
        sessionId: args.session_id,
        sessionKey: args.session_key,
        memoryScope: args.memory_scope,
        useMemory: true,
        memoryCommands: false,
        params: Object.fromEntries(Object.entries(forwarded).filter(([, value]) => value !== undefined)),
        upstreamAuthorization: caller.upstreamAuthorization,
        requestId: caller.requestId,
        clientGone: caller.clientGone,
      });
      // The answerer's own fields, as it sent them (no memory command runs here).
      const fields: Record<string, unknown> = reply;
      const sessionId = reply.conversation_metadata?.conversation_id;
      const text = [
        reply.answer,
        tagged('sql_query', textOf(fields.sql_query)),
        tagged('query_explanation', textOf(fields.query_explanation)),
        sessionId ? `session_id: ${sessionId} (pass it with a follow-up question to continue this conversation)` : '',
        ...reply.warnings.map((warning) => `Warning: ${warning}`),
      ];
      return { text: text.filter(Boolean).join('\n\n'), data: reply };
    },
  };
  return tool;
}

function textOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
