import type { FastifyRequest } from 'fastify';
import type { Config } from '../../config/config.js';

export const MCP_PATH = '/mcp';

/** RFC 9728 §3.1: the metadata of a resource with a path lives at the well-known prefix followed by that path. */
export const METADATA_PATH = `/.well-known/oauth-protected-resource${MCP_PATH}`;

/**
 * The MCP authorization spec's discovery (docs/mcp.md#authorization-discovery): the MCP endpoint is
 * an OAuth protected resource whose tokens come from JWT_ISSUER. Its metadata (RFC 9728) names that
 * issuer, and every 401 from /mcp points to the metadata, so a client can find where to sign the
 * user in. Only an issuer that is a URL can be named: without one there is nothing to discover.
 */
export function protectedResource(config: Config) {
  const issuer = config.JWT_ISSUER;
  if (!issuer || !URL.canParse(issuer) || !/^https?:$/.test(new URL(issuer).protocol)) return undefined;
  // Behind a TLS-terminating proxy the request's own scheme is http; the resource is what clients call.
  const originOf = (request: FastifyRequest) =>
    config.PUBLIC_URL ? new URL(config.PUBLIC_URL).origin : `${request.protocol}://${request.host}`;
  return {
    metadata: (request: FastifyRequest) => ({
      resource: `${originOf(request)}${MCP_PATH}`,
      authorization_servers: [issuer],
      bearer_methods_supported: ['header'],
      resource_name: 'memorychat',
    }),
    /** RFC 9728 §5.1: the WWW-Authenticate of a 401. */
    challenge: (request: FastifyRequest) => `Bearer resource_metadata="${originOf(request)}${METADATA_PATH}"`,
  };
}
