import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { Static, TObject } from 'typebox';
import type { Memory } from '../../core/create-memory.js';
import type { Identity } from '../../model/identity.js';

/** Who calls a tool, as a REST route sees its caller: read once from the HTTP request carrying the call. */
export interface McpCaller {
  identity: Identity;
  /** Sent to the answerer as Authorization with ANSWER_AUTH=forward (upstream-credentials.ts). */
  upstreamAuthorization?: string;
  /** The id of the HTTP request carrying the call, sent to the answerer. */
  requestId: string;
  /** Aborts when the MCP client goes away before the answer. */
  clientGone: AbortSignal;
}

/** A tool's answer: text for the model, and the REST reply's JSON for programs (`structuredContent`). */
export interface ToolAnswer {
  text: string;
  data: Record<string, unknown>;
}

/**
 * One MCP tool: a REST operation under another name. Its arguments are that route's own schema fields
 * (so both refuse the same input), its `operationId` is what an API key's `routes` and the access audit
 * name, and it runs the same call on the memory façade.
 */
export interface McpTool<A extends TObject = TObject> {
  name: string;
  title: string;
  operationId: string;
  description: string;
  arguments: A;
  annotations: ToolAnnotations;
  run(memory: Memory, caller: McpCaller, args: Static<A>): Promise<ToolAnswer>;
}

/** SQL and other text an agent should read verbatim, delimited as the Denodo AI SDK's own MCP tools do. */
export function tagged(tag: string, text: string | null | undefined): string {
  return text ? `<${tag}>\n${text}\n</${tag}>` : '';
}
