import type { Dispatcher } from 'undici';
import { AppError } from '../../model/errors.js';

/**
 * The reply body as text, read only up to `maxBytes` (ANSWER_MAX_REPLY_BYTES): a reply past it is
 * refused as 502 `upstream-bad-response` and the rest of it is not read, so a hostile or broken
 * answerer (a 300 MB answer) costs this process at most that much memory, not the whole reply twice
 * (bytes, then string, then parsed).
 */
export async function readBoundedText(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > maxBytes) {
      body.destroy();
      throw replyTooLarge(maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, bytes).toString('utf8');
}

export function replyTooLarge(maxBytes: number): AppError {
  return new AppError('upstream-bad-response', `the answering backend's reply is over ${maxBytes} bytes (ANSWER_MAX_REPLY_BYTES)`);
}
