import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../model/errors.js';
import { authorizeKeyOperation } from '../plugins/api-keys.js';
import { upstreamAuthorizationOf } from '../upstream-credentials.js';
import { askTool } from './ask-tool.js';
import { mcpServerFor, prepareTools } from './mcp-server.js';
import { MCP_PATH, METADATA_PATH, protectedResource } from './protected-resource.js';
import { recallSimilarTool, turnSqlTool } from './recall-tools.js';
import { forgetSessionTool, sessionContextTool } from './session-tools.js';

/** The headers the transport reads; credentials stay out of the SDK, whose tools get the caller instead. */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version'];

/**
 * The MCP server at `/mcp` (docs/mcp.md): Streamable HTTP, stateless. Each POST authenticates as any
 * route does (a JWT, or an API key acting for a user, rate-limited per user) and gets an MCP server of
 * its own whose tools act as that caller; nothing is kept between requests, so any replica answers
 * any request. Replies are JSON, not event streams: the transport's Response is sent through fastify,
 * so the request id, security headers and logs are those of every other route.
 */
const mcpEndpoint = (version: string): FastifyPluginAsync =>
  async function mcpEndpoint(app) {
    const { memory, config } = app;
    const tools = prepareTools([askTool(config), recallSimilarTool, turnSqlTool, sessionContextTool(config), forgetSessionTool]);
    const discovery = protectedResource(config);

    app.post(
      MCP_PATH,
      {
        // Not in the OpenAPI document: one JSON-RPC endpoint, described by its tools/list.
        schema: { hide: true },
        config: { operationsInBody: true },
        onSend: async (request, reply) => {
          if (discovery && reply.statusCode === 401) reply.header('www-authenticate', discovery.challenge(request));
        },
      },
      async (request, reply) => {
        if (requestsIn(request.body) > 1) {
          throw new AppError('validation-failed', 'send one JSON-RPC request per POST: each tool call counts against the rate limit');
        }
        const clientGone = new AbortController();
        reply.raw.on('close', () => {
          if (!reply.raw.writableEnded) clientGone.abort();
        });
        const server = mcpServerFor(tools, version, {
          memory,
          caller: {
            identity: request.identity,
            upstreamAuthorization: upstreamAuthorizationOf(request),
            requestId: request.id,
            clientGone: clientGone.signal,
          },
          authorize: (operationId) => authorizeKeyOperation(request, app.db, operationId),
          log: request.log,
        });
        server.server.onerror = (err) => request.log.info({ err: err.message }, 'MCP message refused');
        const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
        await server.connect(transport);
        try {
          return await sendResponse(reply, await transport.handleRequest(transportRequest(request), { parsedBody: request.body }));
        } finally {
          await server.close();
        }
      },
    );

    // No event stream to open and no session to end (Streamable HTTP lets a server answer 405 to both).
    app.route({
      method: ['GET', 'DELETE'],
      url: MCP_PATH,
      schema: { hide: true },
      config: { public: true },
      handler: async (_request, reply) => {
        reply.header('allow', 'POST');
        throw new AppError('method-not-allowed', 'this MCP endpoint is stateless: send every message with POST');
      },
    });

    if (discovery) {
      app.get(METADATA_PATH, { schema: { hide: true }, config: { public: true } }, async (request) => discovery.metadata(request));
    }
  };

export default mcpEndpoint;

/**
 * JSON-RPC requests (messages with a method and an id) in a body. MCP 2025-03-26 let a client batch
 * them in one array, which newer revisions dropped; one request per POST keeps the rate limit, which
 * counts HTTP requests, a limit on tool calls.
 */
function requestsIn(body: unknown): number {
  const messages = Array.isArray(body) ? body : [body];
  return messages.filter((message) => typeof message === 'object' && message !== null && 'method' in message && 'id' in message).length;
}

function transportRequest(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  // The transport keeps the URL for handlers that ask; none here does.
  return new Request(new URL(request.url, 'http://mcp.invalid'), { method: request.method, headers });
}

async function sendResponse(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  reply.status(response.status);
  response.headers.forEach((value, name) => {
    reply.header(name, value);
  });
  return reply.send(response.body ? Buffer.from(await response.arrayBuffer()) : undefined);
}
