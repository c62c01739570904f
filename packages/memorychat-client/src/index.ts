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

/**
 * A client for the service at `baseUrl` (e.g. `http://127.0.0.1:8080`) that sends `token` as a
 * Bearer JWT on every request. `options` passes through to openapi-fetch (e.g. a custom `fetch`);
 * per-request headers such as `X-Upstream-Authorization` or `Idempotency-Key` go in each call's `headers`.
 */
export function createMemorychatClient(
  baseUrl: string,
  token: string,
  options: Omit<ClientOptions, 'baseUrl' | 'headers'> = {},
): MemorychatClient {
  return createClient<paths, `${string}/${string}json`>({
    ...options,
    baseUrl,
    headers: { authorization: `Bearer ${token}` },
  });
}
