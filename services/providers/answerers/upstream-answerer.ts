import { context, propagation } from '@opentelemetry/api';
import { Agent, type Dispatcher, request } from 'undici';
import { AppError } from '../../model/errors.js';
import type { Answer, Answerer, AnswerRequest } from './answerer.js';
import { readBoundedText } from './bounded-body.js';
import { type UpstreamCredentials, upstreamAuthorization } from './upstream-auth.js';
import { connectionProblem, isNoRelevantViews, readUpstreamDetail, upstreamProblem } from './upstream-errors.js';
import { encodeListFields, type ListEncoding, type ListEncodingSetting, listEncodingOf } from './upstream-list-fields.js';
import { noRelevantViewsReply, normaliseUpstreamReply } from './upstream-reply.js';

export interface UpstreamOptions extends UpstreamCredentials {
  url: string;
  /** ANSWER_OPERATOR_INSTRUCTIONS: put before every custom_instructions sent (the SDK 0.5 lets a request's replace its own). */
  operatorInstructions?: string;
  /** ANSWER_LIST_FIELDS: lists or comma-separated strings for the SDK's filter fields, or `auto` to learn which. */
  listFields?: ListEncodingSetting;
  /** ANSWER_REQUEST_ID_HEADER: the header memorychat's request id is sent in; unset or '' sends none. */
  requestIdHeader?: string;
  timeoutMs: number;
  /** ANSWER_MAX_REPLY_BYTES: the most of a reply that is read. */
  maxReplyBytes: number;
  log?: { warn(obj: object, msg: string): void; info?(obj: object, msg: string): void };
}

/** The Denodo AI SDK's default `vector_search_total_limit`: the views a question may consider in all. */
const SDK_TOTAL_VIEWS_LIMIT = 20;

/** How much of an error reply's body is logged. */
const LOGGED_BODY_CHARS = 2000;

/**
 * A Denodo-AI-SDK-compatible `answerQuestion` endpoint over HTTP: undici's `request` on a keep-alive
 * agent of its own. The global `fetch` wraps the same client in WHATWG streams and wrote a string
 * body as a separate chunk; the profile showed it as the service's largest single cost per turn
 * (docs/performance.md). A streamed /memoryChat asks it too and streams the answer: the SDK's own
 * `/streamAnswerQuestion` computes the whole answer first and streams its text only, without the SQL
 * and tables the stored turn needs (docs/denodo-ai-sdk.md).
 */
export function createUpstreamAnswerer(options: UpstreamOptions): Answerer {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  const lists = listEncodingOf({
    setting: options.listFields ?? 'auto',
    url: options.url,
    agent,
    timeoutMs: options.timeoutMs,
    log: options.log,
  });
  return {
    kind: 'upstream',
    async answer(answerRequest) {
      const started = performance.now();
      const encoding = await lists.current();
      let replied = await readReply(await post(agent, options, encoding, answerRequest), options);
      // A 422 naming a list field in the other form: the SDK was another release than learnt (or upgraded since).
      const asked = replied.statusCode === 422 ? lists.learn(replied.json?.detail, encoding) : undefined;
      if (asked) replied = await readReply(await post(agent, options, asked, answerRequest), options);
      return { ...interpret(replied, options), latencyMs: performance.now() - started };
    },
    close: () => agent.close(),
  };
}

async function post(
  agent: Agent,
  options: UpstreamOptions,
  encoding: ListEncoding,
  answerRequest: AnswerRequest,
): Promise<Dispatcher.ResponseData> {
  const url = options.url;
  const body = requestBody(options, answerRequest, encoding);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    ...authHeader(options, answerRequest),
    ...(options.requestIdHeader && answerRequest.requestId ? { [options.requestIdHeader.toLowerCase()]: answerRequest.requestId } : {}),
  };
  // W3C traceparent of the active span, so the answerer's own trace joins this one (a no-op when tracing is off).
  propagation.inject(context.active(), headers);
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = answerRequest.signal ? AbortSignal.any([timeout, answerRequest.signal]) : timeout;
  try {
    return await request(url, { dispatcher: agent, method: 'POST', headers, body: JSON.stringify(body), signal });
  } catch (err) {
    if (answerRequest.signal?.aborted) throw err;
    if ((err as Error).name === 'TimeoutError') {
      throw new AppError('upstream-timeout', `the answering backend did not answer within ${options.timeoutMs} ms`);
    }
    throw connectionProblem(url, err);
  }
}

/**
 * The answerQuestion body. `vdp_database_names`, `vdp_tag_names` and `use_views` go in the encoding
 * the SDK's release takes (lists in 1.4, comma-separated strings before), whichever form the caller used.
 */
function requestBody(options: UpstreamOptions, answerRequest: AnswerRequest, encoding: ListEncoding): Record<string, unknown> {
  const body: Record<string, unknown> = { ...answerRequest.params, question: answerRequest.question };
  if (answerRequest.useViews?.length) {
    body.use_views = answerRequest.useViews;
    // The SDK adds the associations of the views it found before use_views, and stops at
    // vector_search_total_limit: associations of unrelated views would crowd the pinned ones out.
    if (body.vector_search_total_limit === undefined) {
      body.vector_search_total_limit = SDK_TOTAL_VIEWS_LIMIT + answerRequest.useViews.length;
    }
  }
  encodeListFields(body, encoding);
  if (answerRequest.customInstructions) {
    body.custom_instructions = options.operatorInstructions
      ? `${options.operatorInstructions}\n\n${answerRequest.customInstructions}`
      : answerRequest.customInstructions;
  }
  return body;
}

function authHeader(options: UpstreamOptions, request: AnswerRequest): Record<string, string> {
  if (options.auth === 'forward' && !request.upstreamAuthorization) {
    throw new AppError(
      'validation-failed',
      'this service forwards your credentials to the answering backend: send them in the X-Upstream-Authorization header ' +
        '(with account linking on, ACCOUNT_LINK_ISSUER, a user signs in once instead: docs/account-linking.md)',
    );
  }
  const authorization = upstreamAuthorization(options, request.upstreamAuthorization);
  return authorization ? { authorization } : {};
}

interface UpstreamReply {
  statusCode: number;
  /** The SDK's own transaction id (X-Transaction-ID of its reply), for its logs. */
  transactionId?: string;
  text: string;
  json: Record<string, unknown> | undefined;
}

async function readReply(response: Dispatcher.ResponseData, options: UpstreamOptions): Promise<UpstreamReply> {
  let text: string;
  try {
    text = await readBoundedText(response.body, options.maxReplyBytes);
  } catch (err) {
    if ((err as Error).name === 'AbortError' || err instanceof AppError) throw err;
    if ((err as Error).name === 'TimeoutError') {
      throw new AppError('upstream-timeout', 'the answering backend did not finish its reply in time');
    }
    throw new AppError('upstream-failed', 'the answering backend broke off its reply', { cause: err });
  }
  const transactionId = response.headers['x-transaction-id'];
  return {
    statusCode: response.statusCode,
    text,
    json: parseObject(text),
    ...(typeof transactionId === 'string' ? { transactionId } : {}),
  };
}

function interpret({ statusCode, text, json, transactionId }: UpstreamReply, options: UpstreamOptions): Omit<Answer, 'latencyMs'> {
  if (statusCode >= 300) {
    options.log?.warn(
      {
        upstreamStatus: statusCode,
        upstreamBody: text.slice(0, LOGGED_BODY_CHARS),
        ...(transactionId ? { upstreamTransactionId: transactionId } : {}),
      },
      'the answering backend answered with an error',
    );
    const detail = readUpstreamDetail(json);
    if (statusCode === 404 && isNoRelevantViews(detail.message)) return noRelevantViewsReply(detail.message);
    throw upstreamProblem(statusCode, detail, options.auth === 'forward', options.url);
  }
  if (!json) throw new AppError('upstream-bad-response', 'the answering backend did not reply with a JSON object');
  return normaliseUpstreamReply(json);
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
