import { connect } from 'node:net';

/** A request written byte for byte: fetch would refuse or normalise most of what the fuzzer sends. */
export interface RawRequest {
  method: string;
  /** The request target as sent: percent-encoding, raw bytes and dot segments are not touched. */
  target: string;
  /** Header lines in order; a value may hold any byte (it is written as Latin-1). */
  headers: [string, string][];
  body?: Buffer;
  /** Send Content-Length (default: whenever there is a body); a number sends that value instead. */
  contentLength?: boolean | number;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

const RESPONSE_TIMEOUT_MS = 20_000;

/**
 * One request on its own connection (`Connection: close`), read to the end of the stream. Resolves
 * with `undefined` when the server closed the connection without a response.
 */
export function rawRequest(port: number, request: RawRequest): Promise<RawResponse | undefined> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${RESPONSE_TIMEOUT_MS} ms to ${request.method} ${request.target.slice(0, 200)}`));
    }, RESPONSE_TIMEOUT_MS);
    socket.on('data', (chunk) => chunks.push(chunk));
    // The server may answer (413, 401) and close before reading a large body: keep what arrived.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks), request.method));
    });
    // No half-close after the request: a server may drop a connection whose client stopped sending.
    socket.write(serialize(request));
  });
}

function serialize(request: RawRequest): Buffer {
  const body = request.body ?? Buffer.alloc(0);
  const lines = [`${request.method} ${request.target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [name, value] of request.headers) lines.push(`${name}: ${value}`);
  const length = request.contentLength ?? request.body !== undefined;
  if (length !== false) lines.push(`Content-Length: ${typeof length === 'number' ? length : body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

function parseResponse(raw: Buffer, method: string): RawResponse | undefined {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine = '', ...headerLines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!status) return undefined;
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if (method === 'HEAD' || status === 204 || status === 304) body = Buffer.alloc(0);
  else if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) body = dechunk(body);
  else if (headers['content-length'] !== undefined) body = body.subarray(0, Number(headers['content-length']));
  return { status, headers, body };
}

function dechunk(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!size) break;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
