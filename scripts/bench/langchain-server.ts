// The fair LangChain peer: the same LangChain flow as langchain-peer.ts (history + PGVectorStore, with
// the two indexes), served as the service is served: fastify with @fastify/jwt (HS256, the bench's
// secret) checked on every request, the service's own /memoryChat body schema (TypeBox, validated by
// fastify's ajv) and the service's HTTP answerer client (undici, keep-alive), in a process of its own,
// so that `npm run bench` reads its CPU from /proc apart from the load driver's. Started by run.ts
// (startServedPeer); environment: PEER_DATABASE_URL (a server database) or PEER_DATA_DIR (an embedded
// copy, opened with one connection as the service opens its own), ANSWER_URL, PORT.
import { randomUUID } from 'node:crypto';
import fastifyJwt from '@fastify/jwt';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import pg from 'pg';
import { memoryChatBody } from '../../services/api/schemas/memory-chat.js';
import { DEFAULT_POOL_IDLE_SECONDS } from '../../services/config/groups/database.js';
import type { Database } from '../../services/db/pool.js';
import { createUpstreamAnswerer } from '../../services/providers/answerers/upstream-answerer.js';
import type { InstantAnswer } from './data.js';
import { openBenchDatabase } from './database.js';
import { langchainTurn, vectorStore } from './langchain-peer.js';
import { JWT_SECRET } from './service.js';

const env = process.env;
const db: Database = env.PEER_DATABASE_URL
  ? (() => {
      // Idle connections kept as long as the service keeps its own: between the bench's slices neither reconnects.
      const pool = new pg.Pool({
        connectionString: env.PEER_DATABASE_URL,
        max: Number(env.PEER_POOL_MAX ?? 10),
        idleTimeoutMillis: DEFAULT_POOL_IDLE_SECONDS * 1000,
      });
      return { pool, scoped: undefined as never, embedded: false, close: () => pool.end() };
    })()
  : await openBenchDatabase(env.PEER_DATA_DIR!);
const store = vectorStore(db.pool);
const answerer = createUpstreamAnswerer({ url: env.ANSWER_URL!, auth: 'none', timeoutMs: 30_000, maxReplyBytes: 10_485_760 });

const app = Fastify({ logger: false }).withTypeProvider<TypeBoxTypeProvider>();
await app.register(fastifyJwt, { secret: JWT_SECRET });
const Body = memoryChatBody(4000);
const authenticate = async (request: { jwtVerify(): Promise<unknown> }) => {
  await request.jwtVerify();
};
app.post('/memoryChat', { schema: { body: Body }, onRequest: authenticate }, async (request) => {
  const { sub } = request.user as { sub: string };
  const body = request.body;
  const sessionId = body.session_id ?? randomUUID();
  const { session_id: _, ...params } = body as Record<string, unknown>;
  await langchainTurn(db.pool, store, {
    userId: sub,
    sessionId,
    question: body.question,
    windowTurns: 10,
    k: 3,
    minSimilarity: 0.25,
    answer: async (question, context) => {
      const reply = await answerer.answer({ question, customInstructions: context, params });
      return reply.fields as unknown as InstantAnswer;
    },
  });
  return { conversation_metadata: { conversation_id: sessionId }, warnings: [] };
});
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ port: Number(env.PORT), host: '127.0.0.1' });

const stop = async () => {
  await app.close();
  await answerer.close?.();
  await db.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
