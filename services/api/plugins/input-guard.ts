import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { storableTextProblem } from '../../core/stored-bounds.js';
import { AppError, type FieldError } from '../../model/errors.js';
import { jsonShapeProblem } from '../json-shape.js';

/**
 * Refuses, as a 400 `validation-failed` naming each field, input that passed the schemas but cannot be
 * stored or forwarded as sent:
 * - NUL characters: Postgres text and jsonb cannot hold U+0000, so they would fail the write;
 * - lone UTF-16 surrogates (JSON `"\ud800"`): not Unicode, so text would silently turn them into
 *   U+FFFD (not what was sent) and jsonb refuses them;
 * - numbers that are not finite: the schema validator coerces a query string such as `limit=1e400`
 *   to Infinity without checking its bounds.
 * It runs after validation, on the values the handler will see: body, query string and path parameters.
 * Before that, a JSON body past the bounds of json-shape.ts (depth, items, keys, values) is refused as
 * soon as it is parsed, before any other work is spent on it.
 * Headers need no check: Node's HTTP parser refuses NUL and control characters in them and decodes
 * them as Latin-1, which has no surrogates.
 * Bodies are JSON only: a body that is not valid UTF-8 (RFC 8259) is refused as `invalid-body` rather
 * than decoded with U+FFFD in place of its bytes (stored text the client never sent), and fastify's
 * own text/plain parser is removed, so any other content type answers 415 instead of a string body
 * that fails the schema with a 400.
 */
export default fp(
  async function inputGuard(app: FastifyInstance) {
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser(['application/json', 'text/plain']);
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, bytes, done) => {
      if (!isUtf8(bytes as Buffer)) return done(new AppError('invalid-body', 'the body is not valid UTF-8'), undefined);
      const body = (bytes as Buffer).toString('utf8');
      const problem = jsonShapeProblem(body);
      if (problem) return done(new AppError('validation-failed', `${problem.field} ${problem.message}`, { errors: [problem] }), undefined);
      parseJson(request, body, done);
    });
    // A callback hook, not an async one: every request passes it, and an async hook costs a promise each.
    app.addHook('preHandler', (request: FastifyRequest, _reply, done) => {
      const errors = [
        ...unstorableValues('body', request.body),
        ...unstorableValues('querystring', request.query),
        ...unstorableValues('params', request.params),
      ];
      done(
        errors.length ? new AppError('validation-failed', errors.map((e) => `${e.field} ${e.message}`).join('; '), { errors }) : undefined,
      );
    });
  },
  { name: 'input-guard', dependencies: ['problem-errors'] },
);

const MAX_REPORTED = 10;

/** Walks the value without recursion; stops after a few findings. */
function unstorableValues(root: string, value: unknown): FieldError[] {
  const errors: FieldError[] = [];
  const pending: { value: unknown; path: string }[] = [{ value, path: root }];
  while (pending.length && errors.length < MAX_REPORTED) {
    const { value: current, path } = pending.pop()!;
    if (typeof current === 'string') {
      const problem = storableTextProblem(current);
      if (problem) errors.push({ field: path, message: problem });
    } else if (typeof current === 'number') {
      if (!Number.isFinite(current)) errors.push({ field: path, message: 'must be a finite number' });
    } else if (current !== null && typeof current === 'object') {
      const entries = Array.isArray(current)
        ? current.map((item, i) => [`[${i}]`, item] as const)
        : Object.entries(current).map(([key, item]) => [`.${key}`, item] as const);
      for (const [suffix, item] of entries.reverse()) {
        const keyProblem = suffix.startsWith('.') ? storableTextProblem(suffix) : undefined;
        if (keyProblem) errors.push({ field: `${path}${suffix}`, message: `has a name that ${keyProblem}` });
        else pending.push({ value: item, path: `${path}${suffix}` });
      }
    }
  }
  return errors.slice(0, MAX_REPORTED);
}
