// Per-call CPU of two pieces of a /memoryChat turn, before and after, side by side in one process:
//
//   node --import tsx scripts/bench/hot-path.ts --before DIR [--calls 20000] [--rounds 6]
//
// DIR holds another revision's services/ (and db/, where a revision kept it at the root: e.g.
// `git archive <rev> services | tar -x -C DIR`,
// with DIR/node_modules linked to this checkout's). Measured: building the retrieval statement
// (retrieveMemory against a database that only records the query: SQL fragments, text, prepared name,
// values) for a follow-up with a database bound, and verifying a repeated HS256 token with @fastify/jwt's
// verifier options without and with the verified-token cache, building the /memoryChat memory block
// (buildMemoryContext: render, pack and exact token count) for sessions of SParC turns, and checking a
// bench answer's depth (nestedDeeperThan). Rounds alternate the order.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createSigner, createVerifier } from 'fast-jwt';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import type { SimilarTurn } from '../../services/model/turns.js';
import { answerFor, loadSparc } from './data.js';

const { values: args } = parseArgs({
  options: { before: { type: 'string' }, calls: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '6' } },
});
if (!args.before) throw new Error('--before DIR is required');
const calls = Number(args.calls);

type Retrieve = typeof import('../../services/db/repositories/memory-store.js').retrieveMemory;
const load = async (root: string): Promise<Retrieve> => {
  const file = ['services/db', 'db'].map((dir) => path.resolve(root, dir, 'repositories/memory-store.ts')).find((f) => existsSync(f));
  if (!file) throw new Error(`${root} holds no db/repositories/memory-store.ts`);
  return (await import(file)).retrieveMemory as Retrieve;
};
const retrieve = { before: await load(args.before), after: await load('.') };

type BuildBlock = typeof import('../../services/core/context/chat-block.js').buildMemoryContext;
type DeeperThan = typeof import('../../services/core/json-bytes.js').nestedDeeperThan;
const loadCore = async (root: string) => ({
  buildBlock: (await import(path.resolve(root, 'services/core/context/chat-block.ts'))).buildMemoryContext as BuildBlock,
  deeperThan: (await import(path.resolve(root, 'services/core/json-bytes.ts'))).nestedDeeperThan as DeeperThan,
});
const core = { before: await loadCore(args.before), after: await loadCore('.') };

// Ten sessions interleaved as the bench's ten clients: call i is step i/10 of session i%10, whose
// window is the session's five latest turns (each turn recurs in five contexts, as in a conversation)
// and whose three similar turns come from anywhere in the data.
const sparc = loadSparc().flatMap((interaction) => interaction.turns);
const storedTurn = (n: number): SimilarTurn => {
  const { question, sql } = sparc[n % sparc.length]!;
  const answer = answerFor(question, sql);
  return {
    turn_number: n,
    status: 'ok',
    question,
    answer: answer.answer,
    sql_query: sql,
    tables_used: answer.tables_used,
    created_at: new Date(1_700_000_000_000 + n * 60_000),
    session_id: '6d3f4a0e-8a55-4c56-9d2a-0c1d5f3a9b7e',
    similarity: 0.5,
  };
};
const blockInput = (i: number) => {
  const step = Math.floor(i / 10) + 5;
  const session = (i % 10) * 1000;
  return {
    window: [1, 2, 3, 4, 5].map((back) => storedTurn(session + step - back)),
    similar: [1, 2, 3].map((k) => storedTurn((i * 7919 + k * 104_729) % 50_000)),
    summary: null,
    maxTokens: 2000,
  };
};
const answers = Array.from({ length: 100 }, (_, i) => answerFor(sparc[i]!.question, sparc[i]!.sql));

const recorder: Queryable = { query: async () => ({ rows: [], rowCount: 0, command: 'SELECT', oid: 0, fields: [] }) };
const embedding = Array.from({ length: 384 }, (_, i) => Math.sin(i) / 14);
const request = (i: number) => ({
  identity: { tenantId: 'default', userId: `user-${i % 1000}`, roles: [] },
  sessionId: '6d3f4a0e-8a55-4c56-9d2a-0c1d5f3a9b7e',
  now: new Date(),
  windowSize: 10,
  k: 3,
  minSimilarity: 0.25,
  embedding,
  embeddingModel: 'local-hash-v2@384',
  search: { query: "'sing' & 'concert'", terms: ['singer', 'concert'] },
  scope: { requested: ['concert_singer'] },
  recentQuestions: 5,
});

const secret = 'x'.repeat(32);
const token = createSigner({ key: secret, expiresIn: 3_600_000 })({ sub: 'alice', tenant: 'default' });
const verifiers = {
  before: createVerifier({ key: secret, algorithms: ['HS256'] }),
  after: createVerifier({ key: secret, algorithms: ['HS256'], cache: 1000, cacheTTL: 60_000 }),
};

async function microsPerCall(work: (i: number) => unknown, n = calls, from = 0): Promise<number> {
  const t0 = process.cpuUsage();
  for (let i = from; i < from + n; i++) await work(i);
  const used = process.cpuUsage(t0);
  return ((used.user + used.system) / n) as number;
}

/** A block costs ~100x a token check: fewer calls, and each round continues the sessions where the last stopped. */
const blockCalls = Math.max(10, Math.round(calls / 20));
// Built before timing: only the block's own work is measured.
const blockInputs = Array.from({ length: blockCalls * Number(args.rounds) }, (_, i) => blockInput(i));

const results: Record<string, number[]> = {};
const callsOf: Record<string, number> = {};
const record = (name: string, us: number, n = calls) => {
  results[name] ??= [];
  results[name].push(us);
  callsOf[name] = n;
};
for (let round = 0; round < Number(args.rounds); round++) {
  const order = round % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const);
  for (const which of order) {
    record(`retrieval statement built, ${which}`, await microsPerCall((i) => retrieve[which](recorder, request(i))));
    record(`token verified, ${which}`, await microsPerCall(() => verifiers[which](token)));
    record(
      `memory block built and counted, ${which}`,
      await microsPerCall((i) => core[which].buildBlock(blockInputs[i]!), blockCalls, round * blockCalls),
      blockCalls,
    );
    record(`answer depth checked, ${which}`, await microsPerCall((i) => core[which].deeperThan(answers[i % 100], 64)));
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [name, us] of Object.entries(results))
  console.log(`${name}: ${median(us).toFixed(1)} µs per call (median of ${us.length} rounds of ${callsOf[name]})`);
