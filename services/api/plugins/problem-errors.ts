import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, ERROR_CATALOG, type ErrorCode, type FieldError } from '../../core/errors.js';

/**
 * Renders every error as an RFC 9457 `application/problem+json` document with a stable `code`.
 * Details of 5xx errors are logged, never sent.
 */
export default fp(
  async function problemErrors(app: FastifyInstance) {
    app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
      const problem = toAppError(error);
      if (problem.status >= 500) {
        request.log.error({ err: error, code: problem.code }, 'request failed');
      } else {
        request.log.info({ code: problem.code, status: problem.status }, problem.message);
      }
      return sendProblem(reply, problem, request.url);
    });
    app.setNotFoundHandler((request, reply) =>
      sendProblem(reply, new AppError('not-found', `no route ${request.method} ${request.url.split('?')[0]}`), request.url),
    );
  },
  { name: 'problem-errors' },
);

function sendProblem(reply: FastifyReply, problem: AppError, instance: string) {
  if (problem.status === 401) reply.header('www-authenticate', 'Bearer');
  const hideDetail = problem.status >= 500 && problem.code === 'internal-error';
  return reply
    .status(problem.status)
    .type('application/problem+json')
    .send({
      type: `/problems/${problem.code}`,
      title: problem.title,
      status: problem.status,
      detail: hideDetail ? 'an unexpected error occurred; it has been logged' : problem.message,
      instance: instance.split('?')[0],
      code: problem.code,
      ...(problem.extra.errors ? { errors: problem.extra.errors } : {}),
      ...problem.extra.extensions,
    });
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload-too-large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported-media-type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid-json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid-json',
};

function toAppError(error: FastifyError | AppError): AppError {
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
  return new AppError('internal-error', undefined, { cause: error });
}

function missingProperty(params: unknown): string {
  const missing = (params as { missingProperty?: string } | undefined)?.missingProperty;
  return missing ? `.${missing}` : '';
}
