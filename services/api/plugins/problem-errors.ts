import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import fp from 'fastify-plugin';
import { recordRefusal } from '../../core/metrics.js';
import { AppError, ERROR_CATALOG, type ErrorCode, type FieldError } from '../../model/errors.js';

/**
 * Renders every error as an RFC 9457 `application/problem+json` document with a stable `code`.
 * Details of 5xx errors are logged, never sent.
 */
export default fp(
  async function problemErrors(app: FastifyInstance) {
    app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
      const problem = toAppError(error);
      recordRefusal(app.metrics, problem.code);
      if (problem.status >= 500) {
        request.log.error({ err: error, code: problem.code }, 'request failed');
      } else {
        request.log.info({ code: problem.code, status: problem.status }, problem.message);
      }
      return sendProblem(reply, problem, request.url);
    });
    // Node answers an Expect other than 100-continue itself, with a bare 417, unless someone listens.
    app.server.on('checkExpectation', (_request, response) => {
      const body = JSON.stringify(problemDocument(new AppError('expectation-failed', 'only "Expect: 100-continue" is supported')));
      response
        .writeHead(417, {
          'content-type': 'application/problem+json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          connection: 'close',
        })
        .end(body);
    });
    app.setNotFoundHandler((request, reply) =>
      sendProblem(reply, new AppError('not-found', `no route ${request.method} ${request.url.split('?')[0]}`), request.url),
    );
  },
  { name: 'problem-errors' },
);

/**
 * Errors the router raises before a route is found (a path that is not valid percent-encoding, an
 * over-long path parameter): Fastify answers them itself, in its own JSON, unless given this.
 */
export const renderFrameworkError: NonNullable<FastifyServerOptions['frameworkErrors']> = (error, request, reply) => {
  const problem = toAppError(error);
  (request as FastifyRequest).log.info({ code: problem.code, status: problem.status }, problem.message);
  void sendProblem(reply as FastifyReply, problem, request.url);
};

/**
 * Requests Node's HTTP parser refuses (control characters in a header, a malformed request line,
 * headers over the size limit, a request that never finished) never reach Fastify; Node answers them
 * on the socket, so the problem document is written there.
 */
export function renderClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const problem = new AppError(CLIENT_ERRORS[error.code ?? ''] ?? 'malformed-request');
  const body = JSON.stringify(problemDocument(problem));
  socket.end(
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

const CLIENT_ERRORS: Record<string, ErrorCode> = {
  HPE_HEADER_OVERFLOW: 'headers-too-large',
  ERR_HTTP_REQUEST_TIMEOUT: 'request-timeout',
};

function sendProblem(reply: FastifyReply, problem: AppError, instance: string) {
  if (problem.status === 401) reply.header('www-authenticate', 'Bearer');
  if (problem.extra.retryAfterSeconds !== undefined) reply.header('retry-after', String(problem.extra.retryAfterSeconds));
  return reply.status(problem.status).type('application/problem+json').send(problemDocument(problem, instance));
}

export function problemDocument(problem: AppError, instance?: string) {
  const hideDetail = problem.status >= 500 && problem.code === 'internal-error';
  return {
    type: `/problems/${problem.code}`,
    title: problem.title,
    status: problem.status,
    detail: hideDetail ? 'an unexpected error occurred; it has been logged' : problem.message,
    ...(instance === undefined ? {} : { instance: instance.split('?')[0] }),
    code: problem.code,
    ...(problem.extra.errors ? { errors: problem.extra.errors } : {}),
    ...problem.extra.extensions,
  };
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload-too-large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported-media-type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid-json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid-json',
};

export function toAppError(error: FastifyError | AppError): AppError {
  if (error instanceof AppError) return error;
  if (error.validation) {
    const errors = error.validation.map(
      (v): FieldError => ({
        field: `${error.validationContext ?? 'body'}${v.instancePath.replace(/\//g, '.')}${missingProperty(v.params)}`,
        message: v.message ?? 'is not valid',
      }),
    );
    return new AppError('validation-failed', errors.map((e) => `${e.field} ${e.message}`).join('; '), { errors });
  }
  const mapped = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (mapped) return new AppError(mapped, error.message);
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
    return new AppError('invalid-json', 'the request body is not valid JSON');
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const code = (Object.keys(ERROR_CATALOG) as ErrorCode[]).find((c) => ERROR_CATALOG[c].status === status);
    return new AppError(code ?? 'validation-failed', error.message);
  }
  if (isDatabaseUnavailable(error)) {
    return new AppError('memory-store-unavailable', 'the memory store could not be reached; please retry', { cause: error });
  }
  return new AppError('internal-error', undefined, { cause: error });
}

/** SQLSTATEs of a server shutting down, crashed or starting up (class 57P), and class 08, connection exceptions. */
const UNAVAILABLE_SQLSTATE = /^(57P0[1-3]|08...)$/;

/** The network under a connection: refused while connecting, reset or broken under a query. */
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

/**
 * The database cannot be reached (down, restarting, the connection cut): the request may succeed
 * when retried, so it is a 503 on every route, not only on those that map it themselves (the turn
 * writes and Idempotency-Keys). The fleet soak saw GDPR requests answer 500 during a restart, and a
 * read whose connection the network reset (ECONNRESET) answer 500 too.
 */
function isDatabaseUnavailable(error: Error & { code?: string }): boolean {
  if (typeof error.code === 'string' && (UNAVAILABLE_SQLSTATE.test(error.code) || UNAVAILABLE_SOCKET_CODES.has(error.code))) return true;
  // node-postgres, when the server closes the connection under a query or while connecting, and when
  // a client whose connection broke is asked again.
  return /^Connection terminated|is not queryable$/.test(error.message);
}

function missingProperty(params: unknown): string {
  const missing = (params as { missingProperty?: string } | undefined)?.missingProperty;
  return missing ? `.${missing}` : '';
}
