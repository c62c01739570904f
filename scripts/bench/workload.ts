// The same conversations for every system: client i plays SParC interactions (varied wording) as
// random users; its first question starts a session, follow-ups continue it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerFor, type Conversation, conversationStream } from './data.js';

export interface TurnInput {
  user: number;
  database: string;
  question: string;
  sql: string;
  sessionId?: string;
}
/** Performs one turn and returns its session id. */
export type TurnFn = (turn: TurnInput) => Promise<string>;

export function conversationClient(seed: number, users: number, turn: TurnFn): () => Promise<void> {
  const next = conversationStream(seed, users);
  let conversation: Conversation | undefined;
  let index = 0;
  let sessionId: string | undefined;
  return async () => {
    if (!conversation || index >= conversation.questions.length) {
      conversation = next();
      index = 0;
      sessionId = undefined;
    }
    const i = index++;
    sessionId = await turn({
      user: conversation.user,
      database: conversation.database,
      question: conversation.questions[i]!,
      sql: conversation.sqls[i]!,
      sessionId,
    });
  };
}

/** An instant Denodo-style answerQuestion endpoint: the gold SQL comes in `bench_sql`. */
export async function startInstantAnswerer(): Promise<{ url: string; server: Server; requests: () => number }> {
  let count = 0;
  const server = createServer((req, res) => {
    // memorychat asks for /openapi.json at first contact (the list encoding it takes): not a question.
    if (req.method !== 'POST') return void res.writeHead(404).end();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      count++;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { question?: string; bench_sql?: string };
      const reply = JSON.stringify(answerFor(body.question ?? '', body.bench_sql));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) }).end(reply);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/answerQuestion`, server, requests: () => count };
}
