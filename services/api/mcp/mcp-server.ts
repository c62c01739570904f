import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger, FastifyError } from 'fastify';
import type { Static } from 'typebox';
import * as z from 'zod';
import type { Memory } from '../../core/create-memory.js';
import { traced } from '../../core/tracing.js';
import { problemDocument, toAppError } from '../plugins/problem-errors.js';
import type { McpCaller, McpTool } from './mcp-tool.js';

/** A tool with its arguments' schema turned into the zod schema McpServer lists and checks, once at start. */
export interface PreparedTool {
  tool: McpTool;
  input: z.ZodType;
}

export function prepareTools(tools: McpTool[]): PreparedTool[] {
  // The arguments are the REST routes' TypeBox (JSON Schema) fields: converted, not written again, so
  // a tool and its route refuse the same input.
  return tools.map((tool) => {
    const schema: z.core.JSONSchema.JSONSchema = JSON.parse(JSON.stringify(tool.arguments));
    return { tool, input: z.fromJSONSchema(schema) };
  });
}

const INSTRUCTIONS =
  'memorychat gives a question-answering backend over data (the Denodo AI SDK) a memory of each user. Ask data questions ' +
  'with ask_data_question and pass back its session_id for follow-ups; recall_similar_questions finds SQL that answered ' +
  "similar questions before; get_turn_sql shows a stored turn's SQL; get_session_context reads a conversation's memory; " +
  "forget_session deletes a conversation. Every tool acts as the signed-in user and sees only that user's memory.";

export interface ToolCallContext {
  memory: Memory;
  caller: McpCaller;
  /** The checks a REST route's operation gets before it runs (an API key's routes, the access audit). */
  authorize(operationId: string): Promise<void>;
  log: FastifyBaseLogger;
}

/** The MCP server of one HTTP request (stateless: a new one each time), its tools bound to that request's caller. */
export function mcpServerFor(tools: PreparedTool[], version: string, context: ToolCallContext): McpServer {
  const server = new McpServer({ name: 'memorychat', version }, { instructions: INSTRUCTIONS });
  for (const { tool, input } of tools) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: input, annotations: tool.annotations },
      (args) => callTool(tool, args, context),
    );
  }
  return server;
}

/**
 * Runs a tool as its REST route runs: the operation's checks first, then the same call on the memory
 * façade. A refusal or failure is a tool error (`isError`) carrying the problem document the route
 * would have answered (code, title, detail; an internal error's detail stays in the log).
 */
async function callTool(tool: McpTool, args: unknown, { memory, caller, authorize, log }: ToolCallContext): Promise<CallToolResult> {
  try {
    return await traced('mcp.tool', { 'mcp.tool.name': tool.name, 'memorychat.operation': tool.operationId }, async () => {
      await authorize(tool.operationId);
      // McpServer checked `args` against `input`, which is `tool.arguments` converted.
      const answer = await tool.run(memory, caller, args as Static<typeof tool.arguments>);
      return { content: [{ type: 'text', text: answer.text }], structuredContent: answer.data };
    });
  } catch (err) {
    const problem = toAppError(err as FastifyError);
    if (problem.status >= 500) log.error({ err, code: problem.code, tool: tool.name }, 'MCP tool failed');
    else log.info({ code: problem.code, status: problem.status, tool: tool.name }, problem.message);
    const document = problemDocument(problem);
    return {
      isError: true,
      content: [{ type: 'text', text: `${document.title} (${document.code}): ${document.detail}` }],
      structuredContent: document,
    };
  }
}
