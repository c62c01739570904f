import Type, { type Static } from 'typebox';

/** Server and HTTP: the listener, request bounds, rate limits and who may call from where. */
export const ServerSchema = Type.Object({
  NODE_ENV: Type.String({ default: 'development' }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 1_048_576 }),
  // Slow clients (docs/scaling.md#connections): the most time from a connection or request's start to
  // its last body byte (408 and closed past it; not the time to answer), how long a connection may idle
  // between requests, and the open connections one process accepts (0: no bound).
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 30_000 }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 72_000 }),
  MAX_CONNECTIONS: Type.Integer({ minimum: 0, default: 10_000 }),
  // Requests per minute per (tenant, user); 0 turns the limit off. Kept in Redis when REDIS_URL is set.
  RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 0, default: 120 }),
  // Requests per minute per API key, whichever users it acts for (docs/api-keys.md); 0 turns it off.
  RATE_LIMIT_PER_KEY_PER_MINUTE: Type.Integer({ minimum: 0, default: 1200 }),
  // Failed authentications (401) per minute per client address before its requests are refused (429); 0: off.
  AUTH_FAILURES_PER_MINUTE: Type.Integer({ minimum: 0, default: 30 }),
  // The reverse proxies in front of the service, so that the client address (the failed-authentication
  // throttle's key, request logs) is taken from X-Forwarded-For past them: their addresses and CIDR
  // ranges, comma-separated. Unset: the TCP peer is the client.
  TRUST_PROXY: Type.Optional(Type.String({ pattern: '^[0-9A-Fa-f.:/]+(?:\\s*,\\s*[0-9A-Fa-f.:/]+)*$' })),
  // Comma-separated origins allowed to call the API from a browser, or `*`; unset: no CORS headers.
  CORS_ORIGINS: Type.Optional(Type.String({ minLength: 1 })),
  // The service's origin as its clients reach it (https://memorychat.example.com behind a TLS proxy), where it names
  // itself: the MCP endpoint's protected-resource metadata (docs/mcp.md). Unset: each request's own scheme and Host.
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://[^/?#]+/?$' })),
  // The memory playground at /playground/ (docs/design.md); unset: on in local mode, off otherwise.
  PLAYGROUND: Type.Optional(Type.Union([Type.Literal('on'), Type.Literal('off')])),
});

export type ServerVariables = Static<typeof ServerSchema>;
