import { AppError } from '../../model/errors.js';

/**
 * The reply body as text, read only up to `maxBytes` (ANSWER_MAX_REPLY_BYTES): a reply past it is
 * refused as 502 `upstream-bad-response` and the rest of it is not read, so a hostile or broken
 * answerer (a 300 MB answer) costs this process at most that much memory, not the whole reply twice
 * (bytes, then string, then parsed).
 */
export async function readBoundedText(body: AsyncIterable<Uint8Array>, maxBytes: number, what = 'the answering backend'): Promise<string> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  // Leaving the loop by the throw ends the iterator, which destroys (undici) or cancels (fetch) the body.
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > maxBytes) throw replyTooLarge(maxBytes, what);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, bytes).toString('utf8');
}

export function replyTooLarge(maxBytes: number, what = 'the answering backend'): AppError {
  return new AppError('upstream-bad-response', `${what}'s reply is over ${maxBytes} bytes (ANSWER_MAX_REPLY_BYTES)`);
}
