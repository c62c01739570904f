// A typed memorychat client: paths, bodies and replies are checked at compile time against the
// service's OpenAPI document (schema.ts is generated from openapi/openapi.json by `npm run openapi`).
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };
/**
 * JSON replies only (application/json, and application/problem+json for errors): `POST /memoryChat`
 * can also answer as Server-Sent Events (`Accept: text/event-stream`), which a streaming consumer
 * reads with fetch.
 */
export type MemorychatClient = Client<paths, `${string}/${string}json`>;

/** The JSON reply of an operation, by its operationId: `Reply<'memoryChat'>`, `Reply<'searchMemory'>`. */
export type Reply<Id extends keyof operations> = operations[Id]['responses'] extends { 200: { content: { 'application/json': infer R } } }
  ? R
  : operations[Id]['responses'] extends { 201: { content: { 'application/json': infer R } } }
    ? R
    : never;

/** An API key from `POST /admin/api-keys`, acting for the end user `user` (X-Memory-User, within the key's user_namespace) when given. */
export interface ApiKeyCredentials {
  apiKey: string;
  user?: string;
}

/**
 * A client for the service at `baseUrl` (e.g. `http://127.0.0.1:8080`) that sends `credentials` on
 * every request: a user's JWT (as a Bearer token), or an API key with the end user it acts for.
 * `options` passes through to openapi-fetch (e.g. a custom `fetch`); per-request headers such as
 * `X-Upstream-Authorization` or `Idempotency-Key` go in each call's `headers`.
 */
export function createMemorychatClient(
  baseUrl: string,
  credentials: string | ApiKeyCredentials,
  options: Omit<ClientOptions, 'baseUrl' | 'headers'> = {},
): MemorychatClient {
  return createClient<paths, `${string}/${string}json`>({
    ...options,
    baseUrl,
    headers: credentialHeaders(credentials),
  });
}

function credentialHeaders(credentials: string | ApiKeyCredentials): Record<string, string> {
  if (typeof credentials === 'string') return { authorization: `Bearer ${credentials}` };
  return {
    'x-api-key': credentials.apiKey,
    // fetch sends each character of a header as one byte, so a user id beyond ASCII goes as its UTF-8 bytes.
    ...(credentials.user === undefined ? {} : { 'x-memory-user': String.fromCharCode(...new TextEncoder().encode(credentials.user)) }),
  };
}
