// An OpenAI-compatible Chat Completions endpoint that takes its time, for the workers' summaries
// (SUMMARY_PROVIDER=openai, OPENAI_BASE_URL): a summarization job then runs long enough that killing
// a worker catches some of them in flight.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rng as seededRandom } from '../bench/data.js';

export interface SlowLlm {
  /** OPENAI_BASE_URL for the service. */
  baseUrl: string;
  /** Completions answered in all. */
  answered(): number;
  close(): Promise<void>;
}

export async function startSlowLlm(options: { minMs: number; maxMs: number; seed?: number }): Promise<SlowLlm> {
  const random = seededRandom(options.seed ?? 1);
  let answered = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
        return;
      }
      const delay = options.minMs + Math.floor(random() * (options.maxMs - options.minMs + 1));
      setTimeout(() => {
        answered++;
        const reply = JSON.stringify({
          id: `chatcmpl-soak-${answered}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: 'soak-summary',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: `The user asked about sales by region (summary ${answered}).`, refusal: null },
              finish_reason: 'stop',
              logprobs: null,
            },
          ],
          usage: { prompt_tokens: 100, completion_tokens: 12, total_tokens: 112 },
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) }).end(reply);
      }, delay);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    answered: () => answered,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
