import { context, propagation } from '@opentelemetry/api';
import { Agent, type Dispatcher, request } from 'undici';
import { AppError } from '../../model/errors.js';
import type { Answer, Answerer, AnswerRequest } from './answerer.js';
import { readBoundedText, replyTooLarge } from './bounded-body.js';
import { noRelevantViewsReply, normaliseUpstreamReply } from './upstream-reply.js';

export interface UpstreamOptions {
  url: string;
  /** A `/streamAnswerQuestion`: its reply is the answer as plain text, streamed (the Denodo AI SDK's form). */
  streamUrl?: string;
  auth: 'forward' | 'basic' | 'bearer' | 'none';
  basicUser?: string;
  basicPassword?: string;
  bearerToken?: string;
  timeoutMs: number;
  /** ANSWER_MAX_REPLY_BYTES: the most of a reply that is read. */
  maxReplyBytes: number;
}

/**
 * A Denodo-AI-SDK-compatible `answerQuestion` endpoint over HTTP: undici's `request` on a keep-alive
 * agent of its own. The global `fetch` wraps the same client in WHATWG streams and wrote a string
 * body as a separate chunk; the profile showed it as the service's largest single cost per turn
 * (docs/performance.md).
 */
export function createUpstreamAnswerer(options: UpstreamOptions): Answerer {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  const { streamUrl } = options;
  return {
    kind: 'upstream',
    async answer(answerRequest) {
      const started = performance.now();
      const response = await post(agent, options, options.url, answerRequest);
      const reply = await readReply(response, options.maxReplyBytes);
      return { ...reply, latencyMs: performance.now() - started };
    },
    ...(streamUrl
      ? {
          async answerStream(answerRequest: AnswerRequest, onText: (text: string) => void) {
            const started = performance.now();
            const response = await post(agent, options, streamUrl, answerRequest);
            const reply = await readStreamedReply(response, onText, options);
            return { ...reply, latencyMs: performance.now() - started };
          },
        }
      : {}),
    close: () => agent.close(),
  };
}

/**
 * The Denodo AI SDK's `/streamAnswerQuestion` takes the answerQuestion body and streams only the
 * answer text (`text/plain`): no SQL, tables or tokens, so a streamed turn is stored without SQL. An
 * error status, or a JSON reply, is read as answerQuestion's and sent as one chunk.
 */
async function readStreamedReply(
  response: Dispatcher.ResponseData,
  onText: (text: string) => void,
  { timeoutMs, maxReplyBytes }: UpstreamOptions,
): Promise<Omit<Answer, 'latencyMs'>> {
  const type = String(response.headers['content-type'] ?? '');
  if (response.statusCode >= 300 || type.includes('json')) {
    const reply = await readReply(response, maxReplyBytes);
    onText(reply.fields.answer);
    return reply;
  }
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  try {
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      if (bytes > maxReplyBytes) {
        response.body.destroy();
        throw replyTooLarge(maxReplyBytes);
      }
      const piece = decoder.decode(chunk, { stream: true });
      if (!piece) continue;
      text += piece;
      onText(piece);
    }
  } catch (err) {
    if ((err as Error).name === 'AbortError' || err instanceof AppError) throw err;
    if ((err as Error).name === 'TimeoutError') {
      throw new AppError('upstream-timeout', `the answering backend did not finish its streamed reply within ${timeoutMs} ms`);
    }
    throw new AppError('upstream-failed', 'the answering backend broke off its streamed reply', { cause: err });
  }
  text += decoder.decode();
  return { fields: { answer: text, tables_used: [] }, status: 'clarification', sqlQuery: null };
}

async function post(agent: Agent, options: UpstreamOptions, url: string, answerRequest: AnswerRequest): Promise<Dispatcher.ResponseData> {
  const body: Record<string, unknown> = { ...answerRequest.params, question: answerRequest.question };
  if (answerRequest.customInstructions) body.custom_instructions = answerRequest.customInstructions;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    ...authHeader(options, answerRequest),
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
    throw new AppError('upstream-failed', 'the answering backend could not be reached', { cause: err });
  }
}

function authHeader(options: UpstreamOptions, request: AnswerRequest): Record<string, string> {
  switch (options.auth) {
    case 'forward':
      if (!request.upstreamAuthorization) {
        throw new AppError(
          'validation-failed',
          'this service forwards your credentials to the answering backend: send them in the X-Upstream-Authorization header',
        );
      }
      return { authorization: request.upstreamAuthorization };
    case 'basic':
      return {
        authorization: `Basic ${Buffer.from(`${options.basicUser}:${options.basicPassword}`).toString('base64')}`,
      };
    case 'bearer':
      return { authorization: `Bearer ${options.bearerToken}` };
    case 'none':
      return {};
  }
}

async function readReply(response: Dispatcher.ResponseData, maxReplyBytes: number): Promise<Omit<Answer, 'latencyMs'>> {
  let text: string;
  try {
    text = await readBoundedText(response.body, maxReplyBytes);
  } catch (err) {
    if ((err as Error).name === 'AbortError' || err instanceof AppError) throw err;
    if ((err as Error).name === 'TimeoutError') {
      throw new AppError('upstream-timeout', 'the answering backend did not finish its reply in time');
    }
    throw new AppError('upstream-failed', 'the answering backend broke off its reply', { cause: err });
  }
  const json = parseObject(text);

  if (response.statusCode >= 500) {
    throw new AppError('upstream-failed', `the answering backend failed with HTTP ${response.statusCode}`);
  }
  if (response.statusCode === 404) {
    const message = messageOf(json) ?? text.trim();
    if (/relevant/i.test(message)) return noRelevantViewsReply(message);
    throw new AppError('upstream-rejected', 'the answering backend answered 404: check ANSWER_URL');
  }
  if (response.statusCode === 401 || response.statusCode === 403) {
    throw new AppError('upstream-rejected', `the answering backend refused the credentials (HTTP ${response.statusCode})`);
  }
  if (response.statusCode >= 400) {
    const message = messageOf(json);
    throw new AppError(
      'upstream-rejected',
      `the answering backend rejected the request (HTTP ${response.statusCode})${message ? `: ${message.slice(0, 300)}` : ''}`,
    );
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

function messageOf(json: Record<string, unknown> | undefined): string | undefined {
  const candidate = json?.answer ?? json?.detail ?? json?.message ?? json?.error;
  return typeof candidate === 'string' ? candidate : undefined;
}
