import type { Config } from '../../config/config.js';
import { AppError } from '../../model/errors.js';
import { readBoundedText } from '../../providers/answerers/bounded-body.js';
import { upstreamAuthorization, upstreamCredentials } from '../../providers/answerers/upstream-auth.js';
import { shownUrl } from '../../providers/answerers/upstream-errors.js';

/**
 * Re-runs stored SQL on a Denodo-AI-SDK-compatible `POST /executeVQL` (`{vql, limit}` →
 * `{execution_result}`), with the same upstream credentials as the answerer (ANSWER_AUTH). Used by
 * `result.csv?fresh=true`, so an export shows today's data rather than the answer-time snapshot.
 * Without ANSWER_EXECUTE_URL it is the answerer's sibling `executeVQL`, which the SDK has from 1.2.1.
 */
export function createVqlExecutor(
  config: Pick<
    Config,
    | 'ANSWER_EXECUTE_URL'
    | 'ANSWER_URL'
    | 'answerAuth'
    | 'ANSWER_BASIC_USER'
    | 'ANSWER_BASIC_PASSWORD'
    | 'ANSWER_BEARER_TOKEN'
    | 'ANSWER_TIMEOUT_MS'
    | 'ANSWER_MAX_REPLY_BYTES'
  >,
) {
  const url = config.ANSWER_EXECUTE_URL ?? (config.ANSWER_URL ? new URL('executeVQL', config.ANSWER_URL).href : undefined);
  return async (sql: string, options: { limit?: number; upstreamAuthorization?: string }): Promise<unknown> => {
    if (!url) {
      throw new AppError('execute-not-configured', 'set ANSWER_EXECUTE_URL (the upstream /executeVQL) to re-run stored SQL');
    }
    const auth = authHeader(config, options.upstreamAuthorization);
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...auth },
        body: JSON.stringify({ vql: sql, ...(options.limit ? { limit: options.limit } : {}) }),
        signal: AbortSignal.timeout(config.ANSWER_TIMEOUT_MS),
      });
    } catch (err) {
      if ((err as Error).name === 'TimeoutError')
        throw new AppError('upstream-timeout', 'the SQL execution endpoint did not answer in time');
      throw new AppError('upstream-failed', `the SQL execution endpoint at ${shownUrl(url)} could not be reached`, {
        cause: err,
      });
    }
    if (response.status === 404 && !config.ANSWER_EXECUTE_URL) {
      throw new AppError(
        'execute-not-configured',
        `the answering backend has no ${shownUrl(url)} (the Denodo AI SDK has /executeVQL from 1.2.1): set ANSWER_EXECUTE_URL to re-run stored SQL`,
      );
    }
    if (response.status >= 500) throw new AppError('upstream-failed', `the SQL execution endpoint failed with HTTP ${response.status}`);
    if (response.status >= 400)
      throw new AppError('upstream-rejected', `the SQL execution endpoint refused the request (HTTP ${response.status})`);
    // Read up to ANSWER_MAX_REPLY_BYTES, like an answer: a huge result is refused, not held whole.
    const text = await readReplyText(response, config.ANSWER_MAX_REPLY_BYTES);
    const body = parseJson(text) as { execution_result?: unknown } | undefined;
    if (!body || typeof body !== 'object')
      throw new AppError('upstream-bad-response', 'the SQL execution endpoint did not reply with JSON');
    return body.execution_result;
  };
}

export type VqlExecutor = ReturnType<typeof createVqlExecutor>;

async function readReplyText(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  try {
    return await readBoundedText(response.body, maxBytes, 'the SQL execution endpoint');
  } catch (err) {
    if (err instanceof AppError) throw err;
    if ((err as Error).name === 'TimeoutError') throw new AppError('upstream-timeout', 'the SQL execution endpoint did not answer in time');
    throw new AppError('upstream-failed', 'the SQL execution endpoint broke off its reply', { cause: err });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function authHeader(config: Parameters<typeof createVqlExecutor>[0], forwarded?: string): Record<string, string> {
  if (config.answerAuth === 'forward' && !forwarded) {
    throw new AppError('validation-failed', 'send your upstream credentials in the X-Upstream-Authorization header to re-run SQL');
  }
  const authorization = upstreamAuthorization(upstreamCredentials(config), forwarded);
  return authorization ? { authorization } : {};
}
