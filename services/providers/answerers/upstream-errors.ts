import { AppError, type FieldError } from '../../model/errors.js';

/**
 * What the Denodo AI SDK says went wrong. FastAPI puts it in `detail`: a string (401
 * "Authentication required"), an object `{error, traceback}` (its 404s and 500s; the traceback is
 * the SDK's own and never shown), or pydantic's list of `{loc, msg}` (422).
 */
export interface UpstreamDetail {
  message?: string;
  fieldErrors: FieldError[];
}

/** The longest SDK message put into a problem's `detail`. */
const MESSAGE_CHARS = 500;

export function readUpstreamDetail(json: Record<string, unknown> | undefined): UpstreamDetail {
  const detail = json?.detail ?? json?.message ?? json?.error;
  if (typeof detail === 'string') return { message: cut(detail), fieldErrors: [] };
  if (Array.isArray(detail)) {
    const fieldErrors = detail.filter(isObject).map((item) => ({
      field: Array.isArray(item.loc) ? item.loc.map(String).join('.') : 'body',
      message: typeof item.msg === 'string' ? cut(item.msg) : 'invalid',
    }));
    return { message: fieldErrors.map((e) => `${e.field}: ${e.message}`).join('; ') || undefined, fieldErrors };
  }
  if (isObject(detail) && typeof detail.error === 'string') return { message: cut(detail.error), fieldErrors: [] };
  return { fieldErrors: [] };
}

/** The 404 the SDK gives when its view search found nothing for the question: an answer for the user. */
export function isNoRelevantViews(message: string | undefined): message is string {
  return !!message && /no relevant views/i.test(message);
}

/**
 * The problem for an SDK error status. The SDK's own message goes into `detail`, so the user sees
 * why (no permission to any views, metadata not synchronized, the LLM's rate limit) instead of a
 * status number; `forwarded` says whether the refused credentials were the caller's.
 */
export function upstreamProblem(status: number, detail: UpstreamDetail, forwarded: boolean, calledUrl: string): AppError {
  const said = detail.message ? `: ${detail.message}` : '';
  const message = detail.message ?? '';
  if (/rate limit/i.test(message) || status === 429) {
    return new AppError('upstream-rate-limited', `the answering backend's LLM is rate limited${said}`);
  }
  if (status === 401 || status === 403) {
    return forwarded
      ? new AppError('upstream-credentials-refused', `the answering backend refused the credentials in X-Upstream-Authorization${said}`)
      : new AppError('upstream-rejected', `the answering backend refused the configured credentials (HTTP ${status})${said}`);
  }
  if (/permission/i.test(message)) return new AppError('upstream-no-views-permitted', `the answering backend${said}`);
  if (/vector store is empty|currently synchronized/i.test(message)) {
    return new AppError('upstream-views-not-synchronized', `the answering backend${said}`);
  }
  if (status >= 500) return new AppError('upstream-failed', `the answering backend failed with HTTP ${status}${said}`);
  // FastAPI's own 404 for a path it has no route for: ANSWER_URL names the server, not its endpoint.
  if (status === 404 && (!detail.message || /^not found$/i.test(detail.message))) {
    return new AppError('upstream-rejected', `POST ${shownUrl(calledUrl)} answered 404 Not Found: ${endpointHint(calledUrl)}`);
  }
  return new AppError(
    'upstream-rejected',
    `the answering backend rejected the request (HTTP ${status})${said}`,
    detail.fieldErrors.length ? { errors: detail.fieldErrors } : {},
  );
}

/**
 * The answerer could not be reached, or broke the connection before its reply: which URL, and what the
 * network said (ECONNREFUSED, ENOTFOUND, …), so an operator sees a wrong ANSWER_URL or a stopped service.
 */
export function connectionProblem(calledUrl: string, err: unknown): AppError {
  const code = networkCode(err);
  const what =
    code === 'ECONNREFUSED'
      ? 'refused the connection'
      : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
        ? 'has a host name that does not resolve'
        : code === 'ECONNRESET' || code === 'UND_ERR_SOCKET'
          ? 'closed the connection before it answered'
          : 'could not be reached';
  return new AppError(
    'upstream-failed',
    `the answering backend at ${shownUrl(calledUrl)} ${what}${code ? ` (${code})` : ''}: check ANSWER_URL and that the service is up`,
    { cause: err },
  );
}

/** A URL as problems show it: without credentials, query or fragment (answerer-identity.ts shows it so too). */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(an invalid URL)';
  }
}

/** What ANSWER_URL should have been: the Denodo AI SDK serves answerQuestion at `/answerQuestion`. */
function endpointHint(url: string): string {
  const shown = shownUrl(url);
  if (/\/answerQuestion$/i.test(shown)) {
    return 'the server has no answerQuestion there; check the Denodo AI SDK version and any path prefix of its proxy in ANSWER_URL';
  }
  return `ANSWER_URL must name the answerQuestion endpoint itself, e.g. ${shown.replace(/\/+$/, '')}/answerQuestion`;
}

/** The system error code of a failed request, on undici's error or its cause. */
function networkCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function cut(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > MESSAGE_CHARS ? `${trimmed.slice(0, MESSAGE_CHARS)}…` : trimmed;
}
