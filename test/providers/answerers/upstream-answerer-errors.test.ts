import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createUpstreamAnswerer } from '../../../services/providers/answerers/upstream-answerer.js';
import { upstreamProblem } from '../../../services/providers/answerers/upstream-errors.js';

/** What an operator reads when ANSWER_URL is wrong (docs/denodo-ai-sdk.md#errors). */
describe('the upstream answerer’s problems name the URL it called', () => {
  it('when nothing listens at ANSWER_URL, then the problem says which URL refused the connection', async () => {
    // A port just released: nothing listens there.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const answerer = createUpstreamAnswerer({
      url: `http://user:secret@127.0.0.1:${port}/answerQuestion?tenant=x`,
      auth: 'none',
      timeoutMs: 5000,
      maxReplyBytes: 65_536,
    });
    try {
      await expect(answerer.answer({ question: 'sales 2024', params: {} })).rejects.toMatchObject({
        code: 'upstream-failed',
        // Credentials and query string are left out.
        message: `the answering backend at http://127.0.0.1:${port}/answerQuestion refused the connection (ECONNREFUSED): check ANSWER_URL and that the service is up`,
      });
    } finally {
      await answerer.close?.();
    }
  });

  it.each([
    [
      'https://sdk.example.com:8008',
      'ANSWER_URL must name the answerQuestion endpoint itself, e.g. https://sdk.example.com:8008/answerQuestion',
    ],
    [
      'https://sdk.example.com/ai/',
      'ANSWER_URL must name the answerQuestion endpoint itself, e.g. https://sdk.example.com/ai/answerQuestion',
    ],
  ])('when %s answers 404 Not Found, then the hint gives the path it lacks', (url, hint) => {
    const problem = upstreamProblem(404, { message: 'Not Found', fieldErrors: [] }, true, url);
    expect(problem).toMatchObject({ code: 'upstream-rejected', message: `POST ${new URL(url).href} answered 404 Not Found: ${hint}` });
  });
});
