import type { FastifyRequest } from 'fastify';

/**
 * The credentials a request's questions go upstream with when ANSWER_AUTH=forward: the caller's own
 * `X-Upstream-Authorization`, sent as the answerer's `Authorization` (docs/denodo-ai-sdk.md). Every
 * way in that reaches the answerer (/memoryChat, a fresh result.csv, the MCP ask tool) takes them here.
 */
export function upstreamAuthorizationOf(request: FastifyRequest): string | undefined {
  const header = request.headers['x-upstream-authorization'];
  return typeof header === 'string' ? header : undefined;
}
