import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export type FakeHandler = (request: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface FakeHttpServer {
  url: string;
  requests: RecordedRequest[];
  /** Replace how the server answers from now on. */
  handle(handler: FakeHandler): void;
  close(): Promise<void>;
}

/**
 * A local HTTP server standing in for an external API (upstream answerer, OpenAI, Anthropic).
 * Unless `servesOpenApi`, it has no OpenAPI document: `GET /openapi.json`, which the upstream
 * answerer asks for at first contact (docs/denodo-ai-sdk.md#releases), is a 404 that neither the
 * handler nor `requests` sees, so fakes that count or hold questions see only questions.
 */
export async function startFakeHttpServer(initial: FakeHandler, options: { servesOpenApi?: boolean } = {}): Promise<FakeHttpServer> {
  let handler = initial;
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', async () => {
      if (!options.servesOpenApi && req.method === 'GET' && req.url === '/openapi.json') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
        return;
      }
      let body: unknown = raw;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        // keep raw text
      }
      const recorded = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body };
      requests.push(recorded);
      try {
        await handler(recorded, res);
      } catch (err) {
        res.writeHead(500).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    handle(next) {
      handler = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
