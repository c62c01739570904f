/**
 * The catalog of problem codes clients may rely on. Each renders as an RFC 9457 problem whose
 * `type` is `/problems/<code>` (documented in docs/errors.md).
 */
export const ERROR_CATALOG = {
  'validation-failed': { status: 400, title: 'The request is not valid' },
  'invalid-json': { status: 400, title: 'The request body is not valid JSON' },
  unauthorized: { status: 401, title: 'Authentication is required' },
  forbidden: { status: 403, title: 'Not allowed' },
  'not-found': { status: 404, title: 'No such resource' },
  'session-not-found': { status: 404, title: 'No such session' },
  'payload-too-large': { status: 413, title: 'The request body is too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported content type' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  'internal-error': { status: 500, title: 'Internal error' },
  'upstream-failed': { status: 502, title: 'The answering backend failed' },
  'upstream-bad-response': { status: 502, title: 'The answering backend sent an unusable reply' },
  'upstream-rejected': { status: 502, title: 'The answering backend refused the request' },
  'answerer-not-configured': { status: 503, title: 'No answering backend is configured' },
  'memory-store-unavailable': { status: 503, title: 'The memory store is unavailable' },
  'upstream-timeout': { status: 504, title: 'The answering backend did not answer in time' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export interface FieldError {
  field: string;
  message: string;
}

export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;
  readonly title: string;

  constructor(
    readonly code: ErrorCode,
    detail?: string,
    readonly extra: {
      errors?: FieldError[];
      cause?: unknown;
      /** Extra members of the problem document, e.g. the conversation a failed turn was stored in. */
      extensions?: Record<string, unknown>;
    } = {},
  ) {
    super(detail ?? ERROR_CATALOG[code].title, { cause: extra.cause });
    this.status = ERROR_CATALOG[code].status;
    this.title = ERROR_CATALOG[code].title;
  }
}
