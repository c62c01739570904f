import Type from 'typebox';
import { TURN_REF_PATTERN } from '../../core/recall/turn-refs.js';

export const TurnRefParams = Type.Object({
  id: Type.String({ format: 'uuid' }),
  ref: Type.String({
    pattern: TURN_REF_PATTERN,
    description: 'A turn number, or first | last | previous (the one before last), counting turns that have SQL',
  }),
});

export const SqlSearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: 200, description: 'Keywords of the question, e.g. "android"' }),
});

export const ResultCsvQuery = Type.Object({
  fresh: Type.Boolean({
    default: false,
    description: 'Re-run the stored SQL on ANSWER_EXECUTE_URL instead of exporting the stored result',
  }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, description: 'Row limit for a fresh run' })),
});

export const ResultCsvHeaders = Type.Object({
  'x-upstream-authorization': Type.Optional(Type.String({ description: 'Sent upstream as Authorization when ANSWER_AUTH=forward' })),
});

export const TurnSql = Type.Object({
  session_id: Type.String({ format: 'uuid' }),
  turn_number: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  status: Type.String(),
  question: Type.String(),
  sql_query: Type.String(),
  query_explanation: Type.Union([Type.String(), Type.Null()]),
  tables_used: Type.Array(Type.String()),
  vdp_database_names: Type.Array(Type.String()),
  keywords: Type.Optional(Type.Array(Type.String(), { description: 'The keywords matched (keyword lookup)' })),
});

export const CsvResponse = {
  description:
    'The result rows as CSV with a header row. When rows were cut before storage (MEMORY_STORE_RESULT_ROWS / _BYTES), the stored CSV carries `X-Result-Truncated: true`, `X-Result-Rows-Stored` and, when known, `X-Result-Rows-Total`; `?fresh=true` re-runs the SQL.',
  content: { 'text/csv': { schema: Type.String() } },
};
