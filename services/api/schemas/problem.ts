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

/** The problem responses a route documents, by status. */
export function problemResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((s) => [s, ProblemRef]));
}
