// A Denodo-style answerQuestion endpoint that takes its time (a random delay per request), so that
// requests are in flight in the service when it is restarted or stopped. It knows which questions it
// is answering right now: those requests are in flight in the service.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rng as seededRandom } from '../bench/data.js';

export interface SlowAnswerer {
  /** The answerQuestion URL to give the service as ANSWER_URL. */
  url: string;
  /** Questions received and not answered yet. */
  pending(): string[];
  /** Questions received in all. */
  received(): number;
  close(): Promise<void>;
}

/** Delays are drawn from [minMs, maxMs] by a seeded generator, so a run can be repeated. */
export async function startSlowAnswerer(options: { minMs: number; maxMs: number; seed?: number }): Promise<SlowAnswerer> {
  const random = seededRandom(options.seed ?? 1);
  const pending = new Map<number, string>();
  let received = 0;
  const server = createServer((req, res) => {
    // memorychat asks for /openapi.json at first contact (the list encoding it takes): not a question.
    if (req.method !== 'POST') return void res.writeHead(404).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = received++;
      const { question = '' } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { question?: string };
      pending.set(id, question);
      const delay = options.minMs + Math.floor(random() * (options.maxMs - options.minMs + 1));
      setTimeout(() => {
        pending.delete(id);
        const reply = JSON.stringify(answerTo(question));
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) }).end(reply);
      }, delay);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/answerQuestion`,
    pending: () => [...pending.values()],
    received: () => received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function answerTo(question: string) {
  return {
    answer: `Answer to: ${question}`,
    sql_query: 'SELECT region, SUM(amount) FROM sales GROUP BY region',
    query_explanation: 'Sums sales per region.',
    tokens: { input_tokens: 10, output_tokens: 20, total_tokens: 30 },
    execution_result: { 'Row 1': [{ columnName: 'region', value: 'EMEA' }] },
    related_questions: [],
    tables_used: ['sales'],
    raw_graph: '',
    sql_execution_time: 0.01,
    vector_store_search_time: 0.01,
    llm_time: 0.1,
    total_execution_time: 0.2,
  };
}
