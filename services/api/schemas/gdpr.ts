import Type from 'typebox';
import { MAX_ID_CHARS } from '../../model/identity.js';

export const GdprRequestParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
/** Every id that can sign in (services/model/identity.ts), so whoever can sign in can be exported and erased. */
export const AdminUserParams = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: MAX_ID_CHARS }) });

export const GdprRequestStatus = Type.Object({
  request_id: Type.String({ format: 'uuid' }),
  action: Type.Union([Type.Literal('export'), Type.Literal('erase')]),
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed')]),
  subject_user_id: Type.String(),
  actor_user_id: Type.String(),
  requested_at: Type.String({ format: 'date-time' }),
  started_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  counts: Type.Record(Type.String(), Type.Integer(), { description: 'Rows exported or erased per kind; never content' }),
  error_code: Type.Union([Type.String(), Type.Null()]),
  status_url: Type.String({
    description: 'Poll it while the request is queued or running, no sooner than its Retry-After header says (seconds)',
  }),
  download_url: Type.Optional(Type.String({ description: 'Present once an export has finished' })),
});

export const GdprExportDocument = Type.Object(
  {
    format: Type.Literal('memorychat-export/1'),
    request_id: Type.String({ format: 'uuid' }),
    tenant_id: Type.String(),
    user_id: Type.String(),
    generated_at: Type.String({ format: 'date-time' }),
    sessions: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
      description: 'Every live session with its summary and `turns` (questions, answers, SQL, results, messages)',
    }),
  },
  { additionalProperties: true },
);

const JobCounts = Type.Object({
  waiting: Type.Integer(),
  active: Type.Integer(),
  delayed: Type.Integer(),
  completed: Type.Integer(),
  failed: Type.Integer(),
  paused: Type.Integer(),
  prioritized: Type.Integer(),
});

export const AdminJobsResponse = Type.Object({
  mode: Type.Union([Type.Literal('bullmq'), Type.Literal('in-process')]),
  counts: JobCounts,
});

export const FailedJobsQuery = Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }) });

export const FailedJobsResponse = Type.Object({
  jobs: Type.Array(
    Type.Object({
      id: Type.String(),
      kind: Type.String(),
      data: Type.Record(Type.String(), Type.Unknown(), { description: 'Ids only: tenant, session, request' }),
      failed_reason: Type.String(),
      attempts_made: Type.Integer(),
      failed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    }),
  ),
});
