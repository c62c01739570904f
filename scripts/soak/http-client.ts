// A keep-alive HTTP client for load against the service that never throws: every attempt ends as a
// response or as a network failure with its error code, which is what a retrying client decides on.
import { Pool } from 'undici';

export type Attempt =
  | { kind: 'response'; status: number; headers: Record<string, string | string[] | undefined>; body: any }
  /** `origin`: the base URL the attempt went to; `sentAt`: when (epoch ms). */
  | { kind: 'network'; code: string; message: string; origin: string; sentAt: number };

export interface HttpClient {
  send(
    method: 'GET' | 'POST',
    path: string,
    options: { token: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number },
  ): Promise<Attempt>;
  close(): Promise<void>;
}

export function createHttpClient(baseUrl: string, connections: number): HttpClient {
  const pool = new Pool(baseUrl, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
  return {
    async send(method, path, { token, body, headers = {}, timeoutMs = 30_000 }) {
      const sentAt = Date.now();
      try {
        const res = await pool.request({
          method,
          path,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        const text = await res.body.text();
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          // not JSON: keep the text
        }
        return { kind: 'response', status: res.statusCode, headers: res.headers, body: parsed };
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        return { kind: 'network', code: e.code ?? e.name, message: e.message, origin: baseUrl, sentAt };
      }
    },
    close: () => pool.close(),
  };
}

/**
 * Several replicas behind one client, as a client-side load balancer does it: each request goes to
 * the client's own replica, and after a connection error there to the next one for `avoidMs`.
 */
export function createFailoverClient(replicas: HttpClient[], home: number, avoidMs = 3_000): HttpClient {
  const avoidUntil = replicas.map(() => 0);
  const pick = () => {
    for (let i = 0; i < replicas.length; i++) {
      const candidate = (home + i) % replicas.length;
      if (avoidUntil[candidate]! <= Date.now()) return candidate;
    }
    return home;
  };
  return {
    async send(method, path, options) {
      const chosen = pick();
      const attempt = await replicas[chosen]!.send(method, path, options);
      if (attempt.kind === 'network') avoidUntil[chosen] = Date.now() + avoidMs;
      return attempt;
    },
    // The replicas' pools are shared by every client: their owner closes them.
    close: async () => {},
  };
}
