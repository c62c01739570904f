/**
 * The catalog of problem codes clients may rely on. Each renders as an RFC 9457 problem whose
 * `type` is `/problems/<code>` (documented in docs/errors.md).
 */
export const ERROR_CATALOG = {
  'validation-failed': { status: 400, title: 'The request is not valid' },
  'invalid-json': { status: 400, title: 'The request body is not valid JSON' },
  'invalid-body': { status: 400, title: 'The request body is not valid UTF-8' },
  'invalid-message-chain': { status: 400, title: 'The message chain is not a valid conversation turn' },
  'invalid-cursor': { status: 400, title: 'The paging cursor is not valid' },
  'malformed-request': { status: 400, title: 'The request is not valid HTTP' },
  'account-link-invalid': { status: 400, title: 'The sign-in to link an account cannot be completed' },
  unauthorized: { status: 401, title: 'Authentication is required' },
  forbidden: { status: 403, title: 'Not allowed' },
  'upstream-credentials-refused': { status: 403, title: 'The answering backend refused the forwarded credentials' },
  'upstream-no-views-permitted': { status: 403, title: 'The caller may read no views in the answering backend' },
  'account-not-linked': { status: 403, title: 'The user has not linked an account of the identity provider' },
  'account-link-expired': { status: 403, title: 'The linked account must sign in again' },
  'not-found': { status: 404, title: 'No such resource' },
  'session-not-found': { status: 404, title: 'No such session' },
  'turn-not-found': { status: 404, title: 'No such turn' },
  'turn-has-no-sql': { status: 404, title: 'The turn has no SQL' },
  'result-not-stored': { status: 404, title: 'The turn has no stored result' },
  'stored-sql-masked': { status: 409, title: 'The stored SQL has masked personal data and cannot be re-run' },
  'gdpr-request-not-found': { status: 404, title: 'No such GDPR request' },
  'method-not-allowed': { status: 405, title: 'The route does not answer this method' },
  'request-timeout': { status: 408, title: 'The request was not received in time' },
  'export-not-ready': { status: 409, title: 'The export is not finished yet' },
  'idempotency-in-progress': { status: 409, title: 'A request with this Idempotency-Key is still being processed' },
  'erased-during-request': { status: 409, title: "The user's data was erased while the request ran" },
  'export-expired': { status: 410, title: 'The export has expired or was erased' },
  'expectation-failed': { status: 417, title: 'The Expect header cannot be met' },
  'payload-too-large': { status: 413, title: 'The request body is too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported content type' },
  'misdirected-request': { status: 421, title: 'The request names a host this service does not answer to' },
  'rate-limited': { status: 429, title: 'Too many requests' },
  'erase-requests-limited': { status: 429, title: 'Too many erasure requests' },
  'sql-queries-limited': { status: 429, title: 'Too many questions to the SQL answerer at once' },
  'idempotency-key-reused': { status: 422, title: 'The Idempotency-Key was already used for a different request' },
  'headers-too-large': { status: 431, title: 'The request headers are too large' },
  'internal-error': { status: 500, title: 'Internal error' },
  'upstream-failed': { status: 502, title: 'The answering backend failed' },
  'upstream-bad-response': { status: 502, title: 'The answering backend sent an unusable reply' },
  'upstream-rejected': { status: 502, title: 'The answering backend refused the request' },
  'identity-provider-failed': { status: 502, title: 'The identity provider failed' },
  'answerer-not-configured': { status: 503, title: 'No answering backend is configured' },
  'memory-store-unavailable': { status: 503, title: 'The memory store is unavailable' },
  'embeddings-unavailable': { status: 503, title: 'The embeddings provider is unavailable' },
  'execute-not-configured': { status: 503, title: 'No SQL execution endpoint is configured' },
  'account-linking-not-configured': { status: 503, title: 'No identity provider is configured for account linking' },
  'queue-unavailable': { status: 503, title: 'The job queue is unavailable' },
  'shutting-down': { status: 503, title: 'The service is shutting down' },
  'sql-database-busy': { status: 503, title: 'The SQL database has no free connection' },
  'upstream-views-not-synchronized': { status: 503, title: "The answering backend's view metadata is not synchronized" },
  'upstream-rate-limited': { status: 503, title: "The answering backend's LLM is rate limited" },
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
      /** Sent as Retry-After: when asking again can succeed. */
      retryAfterSeconds?: number;
    } = {},
  ) {
    super(detail ?? ERROR_CATALOG[code].title, { cause: extra.cause });
    this.status = ERROR_CATALOG[code].status;
    this.title = ERROR_CATALOG[code].title;
  }
}
