import { AppError } from '../../model/errors.js';
import type { Answer, Answerer, AnswerRequest } from './answerer.js';
import { noRelevantViewsReply, normaliseUpstreamReply } from './upstream-reply.js';

export interface UpstreamOptions {
  url: string;
  auth: 'forward' | 'basic' | 'bearer' | 'none';
  basicUser?: string;
  basicPassword?: string;
  bearerToken?: string;
  timeoutMs: number;
}

/** A Denodo-AI-SDK-compatible `answerQuestion` endpoint over HTTP. */
export function createUpstreamAnswerer(options: UpstreamOptions): Answerer {
  return {
    kind: 'upstream',
    async answer(request) {
      const started = performance.now();
      const response = await post(options, request);
      const reply = await readReply(response);
      return { ...reply, latencyMs: performance.now() - started };
    },
  };
}

async function post(options: UpstreamOptions, request: AnswerRequest): Promise<Response> {
  const body: Record<string, unknown> = { ...request.params, question: request.question };
  if (request.customInstructions) body.custom_instructions = request.customInstructions;
  const headers = { 'content-type': 'application/json', accept: 'application/json', ...authHeader(options, request) };
  try {
    return await fetch(options.url, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (err) {
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

async function readReply(response: Response): Promise<Omit<Answer, 'latencyMs'>> {
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') {
      throw new AppError('upstream-timeout', 'the answering backend did not finish its reply in time');
    }
    throw new AppError('upstream-failed', 'the answering backend broke off its reply', { cause: err });
  }
  const json = parseObject(text);

  if (response.status >= 500) {
    throw new AppError('upstream-failed', `the answering backend failed with HTTP ${response.status}`);
  }
  if (response.status === 404) {
    const message = messageOf(json) ?? text.trim();
    if (/relevant/i.test(message)) return noRelevantViewsReply(message);
    throw new AppError('upstream-rejected', 'the answering backend answered 404: check ANSWER_URL');
  }
  if (response.status === 401 || response.status === 403) {
    throw new AppError('upstream-rejected', `the answering backend refused the credentials (HTTP ${response.status})`);
  }
  if (response.status >= 400) {
    const message = messageOf(json);
    throw new AppError(
      'upstream-rejected',
      `the answering backend rejected the request (HTTP ${response.status})${message ? `: ${message.slice(0, 300)}` : ''}`,
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
