import Type from 'typebox';

/** RFC 9457 problem document; registered once and referenced by every route. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: '`/problems/<code>`, documented in docs/errors.md' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.Optional(Type.String()),
    code: Type.String({ description: 'A stable machine-readable error code' }),
    errors: Type.Optional(
      Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
        description: 'One entry per invalid field (validation-failed)',
      }),
    ),
  },
  { $id: 'Problem', additionalProperties: true },
);

export const ProblemRef = Type.Ref('Problem');

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request',
  401: 'Missing or invalid token',
  403: 'Not allowed for this token',
  404: "Not found (or not the caller's)",
  409: 'Conflict: not ready yet, or the same request is still being processed',
  413: 'Body too large',
  415: 'Unsupported content type',
  429: 'Too many requests for this user; Retry-After says when to retry',
  422: 'The request cannot be processed as sent (e.g. an Idempotency-Key reused for another request)',
  502: 'The answering backend failed',
  503: 'A dependency is unavailable or not configured',
  504: 'The answering backend timed out',
};

/** The problem responses a route documents, by status, as `application/problem+json`. */
export function problemResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      { description: DESCRIPTIONS[s] ?? 'Problem', content: { 'application/problem+json': { schema: ProblemRef } } },
    ]),
  );
}
