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
export function upstreamProblem(status: number, detail: UpstreamDetail, forwarded: boolean): AppError {
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
  if (status === 404 && !detail.message) {
    return new AppError('upstream-rejected', 'the answering backend answered 404: check ANSWER_URL');
  }
  return new AppError(
    'upstream-rejected',
    `the answering backend rejected the request (HTTP ${status})${said}`,
    detail.fieldErrors.length ? { errors: detail.fieldErrors } : {},
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function cut(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > MESSAGE_CHARS ? `${trimmed.slice(0, MESSAGE_CHARS)}…` : trimmed;
}
