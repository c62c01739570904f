import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ChatStream } from '../core/chat/chat-request.js';
import { recordRefusal } from '../core/metrics.js';
import type { AppError } from '../model/errors.js';
import { problemDocument, toAppError } from './plugins/problem-errors.js';

/** A request that asks for Server-Sent Events (`Accept: text/event-stream`). */
export function wantsEventStream(request: FastifyRequest): boolean {
  return /\btext\/event-stream\b/i.test(request.headers.accept ?? '');
}

/**
 * A streamed /memoryChat reply (docs/memory-api.md, "Streaming"): events `memory` (what context was
 * used), `answer` (`{"text": …}` chunks as they arrive), then `reply` (the complete JSON reply, as the
 * non-streaming call returns it) or `error` (a problem document). The response starts with the first
 * event: a request refused before that (validation, auth, an idempotency conflict) gets a plain
 * problem+json response instead.
 */
export function openEventStream(request: FastifyRequest, reply: FastifyReply) {
  const aborts = new AbortController();
  const raw = reply.raw;
  // The socket closing before the reply was written to the end: the client went away.
  raw.on('close', () => {
    if (!raw.writableEnded) aborts.abort();
  });
  let started = false;

  const send = (event: string, data: unknown) => {
    if (aborts.signal.aborted || raw.writableEnded) return;
    if (!started) {
      started = true;
      reply.hijack();
      raw.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
    }
    raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };

  const stream: ChatStream = {
    signal: aborts.signal,
    memory: (event) => send('memory', event),
    text: (chunk) => send('answer', { text: chunk }),
  };

  return {
    stream,
    get started() {
      return started;
    },
    /** The complete reply, then the end of the stream. */
    finish(body: unknown) {
      send('reply', body);
      if (!raw.writableEnded) raw.end();
    },
    /** An error after the stream started: an `error` event with the problem document, then the end. */
    fail(err: unknown) {
      const problem: AppError = toAppError(err as AppError);
      if (problem.status >= 500) request.log.error({ err, code: problem.code }, 'streamed request failed');
      recordRefusal(request.server.metrics, problem.code);
      send('error', problemDocument(problem, request.url));
      if (!raw.writableEnded) raw.end();
    },
  };
}
