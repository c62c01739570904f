// `npm run bench -- answer-length [--server] [--chars 500,2000,8000] [--calls 200]`: /memoryChat's
// retrieval statement for a user whose stored answers are long, reading each window and similar
// turn's answer whole (as /memory/context does) against its first 501 characters (what /memoryChat's
// block renders, question-memory.ts), alternating call by call on one copy of the seeded data
// (`npm run bench -- memory-chat [--server]` seeds it). Per call: wall time, this process's CPU (pg's
// decoding of the rows) and, on the server, the database's (its backend).
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ANSWER_CHARS_IN_CONTEXT } from '../../services/core/context/chat-block.js';
import { questionSearch } from '../../services/core/search-terms/lexical-terms.js';
import type { Database } from '../../services/db/pool.js';
import { retrieveMemory } from '../../services/db/repositories/memory-retrieval.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { interactionsFor, rng, TENANT, userDatabases, userId } from './data.js';
import { copyDataDir, openBenchDatabase } from './database.js';
import { percentile } from './load.js';
import { runNsOf } from './rss.js';
import { DIMENSIONS, EMBEDDING_MODEL } from './seed.js';
import { dropDatabase, openServerDatabase, recreateDatabase } from './server-databases.js';

const { values: args } = parseArgs({
  options: {
    server: { type: 'boolean', default: false },
    chars: { type: 'string', default: '500,2000,8000' },
    calls: { type: 'string', default: '200' },
    users: { type: 'string', default: '1000' },
  },
});

const DB_PREFIX = process.env.BENCH_DB_PREFIX ?? 'mc_bench';
const seeded = `${DB_PREFIX}_v5_${args.users}x100`;
const copy = `${DB_PREFIX}_answers_${process.pid}`;
const dir = await mkdtemp(path.join(tmpdir(), 'memorychat-answers-'));
let db: Database;
let databaseCpu: () => number = () => Number.NaN;
if (args.server) {
  await recreateDatabase(copy, seeded);
  db = await openServerDatabase(copy, 1);
  // The pool's one backend, by its scheduler clock, as statement-cpu.ts reads it.
  const pid = (await db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  databaseCpu = () => runNsOf(pid) / 1e6;
} else {
  await copyDataDir(path.join(process.env.BENCH_CACHE ?? path.join(tmpdir(), 'memorychat-bench'), `v5-${args.users}x100`), dir);
  db = await openBenchDatabase(dir);
}

const user = 7;
const identity = { tenantId: TENANT, userId: userId(user), roles: [] as string[] };
const { rows: sessions } = await db.pool.query<{ session_id: string }>(
  'SELECT session_id FROM sessions WHERE tenant_id = $1 AND user_id = $2 ORDER BY turn_count DESC LIMIT 1',
  [TENANT, identity.userId],
);
const questions = interactionsFor(userDatabases(user)).flatMap((i) => i.turns.map((t) => t.question));
const r = rng(11);
/** Calls not counted at each length: the first ones plan the statement and compile the code. */
const WARMUP = 40;

console.log(`user ${identity.userId}, ${args.calls} calls per reading and length, alternating; load average ${loadavg()[0]!.toFixed(1)}`);
console.log('\n| stored answer chars | reading | p50 ms | app CPU ms per call | db CPU ms per call |\n| ---: | --- | ---: | ---: | ---: |');
for (const chars of args.chars.split(',').map(Number)) {
  // Each answer its own text repeated to the length, as a long prose answer with a table would be.
  await db.pool.query(
    `UPDATE turns SET answer = left(repeat(answer || ' ', $3::int / greatest(length(answer), 1) + 1), $3::int)
     WHERE tenant_id = $1 AND user_id = $2`,
    [TENANT, identity.userId, chars],
  );
  const stats = { whole: { wall: [] as number[], app: 0, db: 0 }, cut: { wall: [] as number[], app: 0, db: 0 } };
  for (let i = 0; i < 2 * Number(args.calls) + WARMUP; i++) {
    const reading = i % 2 === 0 ? 'whole' : 'cut';
    const question = questions[Math.floor(r() * questions.length)]!;
    const embedding = embedText(question, DIMENSIONS)!;
    const search = questionSearch(question);
    const app = process.cpuUsage();
    const dbFrom = databaseCpu();
    const from = performance.now();
    await retrieveMemory(db.scoped.asUser(identity), {
      identity,
      sessionId: sessions[0]?.session_id ?? randomUUID(),
      now: new Date(),
      windowSize: 10,
      k: 20,
      minSimilarity: 0.3,
      embedding,
      embeddingModel: EMBEDDING_MODEL,
      search,
      scope: {},
      ...(reading === 'cut' ? { answerChars: ANSWER_CHARS_IN_CONTEXT + 1 } : {}),
    });
    if (i < WARMUP) continue;
    const s = stats[reading];
    s.wall.push(performance.now() - from);
    const used = process.cpuUsage(app);
    s.app += (used.user + used.system) / 1000;
    s.db += databaseCpu() - dbFrom;
  }
  for (const reading of ['whole', 'cut'] as const) {
    const s = stats[reading];
    const n = s.wall.length;
    const p50 = percentile(
      [...s.wall].sort((a, b) => a - b),
      50,
    );
    console.log(`| ${chars} | ${reading} | ${p50.toFixed(2)} | ${(s.app / n).toFixed(3)} | ${args.server ? (s.db / n).toFixed(3) : '–'} |`);
  }
}
await db.close();
if (args.server) await dropDatabase(copy);
await rm(dir, { recursive: true, force: true });
