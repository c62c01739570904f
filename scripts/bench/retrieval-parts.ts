// `npm run bench -- retrieval-parts (--database NAME | --data DIR) [--rounds R] [--variants a,b] [--against CHECKOUT]`: what
// each part of /memoryChat's retrieval statement costs the database and this process, call by call.
// The statement as the service sends it (memory-chat's seeded users, a follow-up in their latest
// session, under their row-security scope, prepared) and the same request without one part, the
// variants taking turns call by call with the order rotated, so that none runs always first or last
// (timed in blocks of calls, the first and last variant of each block read ~0.1 ms a call higher).
// Database CPU: the server backend's scheduler clock (--database, a copy of `memory-chat --server`'s
// data: mc_bench_v5_1000x100), or the embedded database's process (--data, a stopped data directory
// seeded by `memory-chat`, copied first). App CPU: this process's, which also embeds the question.
// `rows-as-jsonb` is the service's statement with its rows built as jsonb, as before migration 027;
// `no-embedding` the request without the question's vector (the window and session only).
// `--against` adds `against`: the service's request sent by another checkout's retrieveMemory (a
// worktree of an earlier commit, with node_modules linked to ours), to compare two builds call by call.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ANSWER_CHARS_IN_CONTEXT } from '../../services/core/context/chat-block.js';
import { RERANK_CANDIDATES } from '../../services/core/context/table-links.js';
import { VERIFIED_PAIRS_K } from '../../services/core/pairs/pair-recall.js';
import { questionSearch } from '../../services/core/search-terms/lexical-terms.js';
import { type RetrievalRequest, retrieveMemory } from '../../services/db/repositories/memory-retrieval.js';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import { scopedDatabase } from '../../services/db/row-security.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { conversationStream, TENANT, userId } from './data.js';
import { openBenchDatabase } from './database.js';
import { SETTINGS } from './floor.js';
import { childMatching, runNsOf } from './rss.js';
import { DIMENSIONS, EMBEDDING_MODEL } from './seed.js';
import { openServerDatabase } from './server-databases.js';

const { values: args } = parseArgs({
  options: {
    database: { type: 'string' },
    data: { type: 'string' },
    rounds: { type: 'string', default: '40' },
    users: { type: 'string', default: '1000' },
    variants: { type: 'string' },
    against: { type: 'string' },
  },
});

/** The request as question-memory.ts makes it for /memoryChat with the service's defaults (its window is the floor's). */
const SERVICE: Partial<RetrievalRequest> = {
  k: RERANK_CANDIDATES,
  answerer: 'upstream http://127.0.0.1/answerQuestion',
  recentQuestions: 20,
  verifiedPairs: { k: VERIFIED_PAIRS_K, minSimilarity: null },
  answerChars: ANSWER_CHARS_IN_CONTEXT + 1,
};
type Retrieve = typeof retrieveMemory;
const against: Retrieve | undefined = args.against
  ? (await import(path.resolve(args.against, 'services/db/repositories/memory-retrieval.ts'))).retrieveMemory
  : undefined;
/** A variant's request, and for some the form it is sent in or the retrieval that sends it (the service's own otherwise). */
interface Variant {
  request: Partial<RetrievalRequest>;
  sentAs?: (queryable: Queryable) => Queryable;
  retrieve?: Retrieve;
}
const VARIANTS: Record<string, Variant> = {
  service: { request: SERVICE },
  'three-candidates': { request: { ...SERVICE, k: 3 } },
  'no-pairs': { request: { ...SERVICE, verifiedPairs: undefined } },
  'no-recent-questions': { request: { ...SERVICE, recentQuestions: undefined } },
  'whole-answers': { request: { ...SERVICE, answerChars: undefined } },
  floor: { request: { k: SETTINGS.k } },
  // As /memoryChat sends it without the question's embedding (MEMORY_SEMANTIC_SEARCH_K=0, or the embedder down).
  'no-embedding': { request: { ...SERVICE, k: 0, embedding: null } },
  'rows-as-jsonb': { request: SERVICE, sentAs: asJsonb },
  ...(against ? { against: { request: SERVICE, retrieve: against } } : {}),
};

/**
 * The statement building its rows as jsonb, as it did before migration 027 (the service's builds json):
 * the same text with to_jsonb for to_json, prepared under a name of its own.
 */
function asJsonb(inner: Queryable): Queryable {
  return {
    query(statement: never, values?: never) {
      const config = statement as { name: string; text: string };
      if (!config.text.includes('to_json(')) throw new Error('the retrieval statement builds no row with to_json');
      const text = config.text.replaceAll('to_json(', 'to_jsonb(').replaceAll('json_build_object(', 'jsonb_build_object(');
      return inner.query({ ...config, name: `${config.name}_jsonb`, text } as never, values);
    },
  };
}
const chosen = args.variants ? args.variants.split(',') : Object.keys(VARIANTS);
for (const v of chosen) if (!VARIANTS[v]) throw new Error(`unknown variant ${v}: one of ${Object.keys(VARIANTS).join(', ')}`);

let workDir: string | undefined;
if (args.data) {
  workDir = mkdtempSync(path.join(tmpdir(), 'memorychat-retrieval-parts-'));
  cpSync(args.data, workDir, { recursive: true });
}
const db = workDir ? await openBenchDatabase(workDir) : await openServerDatabase(args.database ?? 'mc_bench_v5_1000x100', 1);
const dbPid = workDir
  ? (childMatching(process.pid, 'pglite-process') ?? -1)
  : (await db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
const scoped = scopedDatabase(db.pool);
const { rows: latest } = await db.pool.query<{ user_id: string; session_id: string }>(
  'SELECT DISTINCT ON (user_id) user_id, session_id FROM sessions WHERE tenant_id = $1 AND expires_at > now() ORDER BY user_id, updated_at DESC',
  [TENANT],
);
const sessionOf = new Map(latest.map((r) => [r.user_id, r.session_id]));

const totals = new Map(chosen.map((v) => [v, { dbNs: 0, appUs: 0, calls: 0 }]));
const next = conversationStream(11, Number(args.users));
const WARM_UP_ROUNDS = 2;
let rotation = 0;
for (let round = 0; round < Number(args.rounds); round++) {
  for (let c = 0; c < 30; c++) {
    const conversation = next();
    const user = userId(conversation.user);
    const identity = { tenantId: TENANT, userId: user, roles: [] };
    const question = conversation.questions[0]!;
    const request: RetrievalRequest = {
      identity,
      sessionId: sessionOf.get(user),
      now: new Date(),
      windowSize: SETTINGS.windowSize,
      k: SETTINGS.k,
      minSimilarity: SETTINGS.minSimilarity,
      embedding: embedText(question, DIMENSIONS),
      embeddingModel: EMBEDDING_MODEL,
      search: questionSearch(question),
      scope: { requested: [conversation.database] },
    };
    const at = rotation++ % chosen.length;
    for (const variant of [...chosen.slice(at), ...chosen.slice(0, at)]) {
      const { request: parts, sentAs, retrieve = retrieveMemory } = VARIANTS[variant]!;
      const queryable = scoped.asUser(identity);
      const dbBefore = runNsOf(dbPid);
      const appBefore = process.cpuUsage();
      await retrieve(sentAs ? sentAs(queryable) : queryable, { ...request, ...parts });
      if (round < WARM_UP_ROUNDS) continue;
      const app = process.cpuUsage(appBefore);
      const t = totals.get(variant)!;
      t.dbNs += runNsOf(dbPid) - dbBefore;
      t.appUs += app.user + app.system;
      t.calls++;
    }
  }
}
console.log(
  `${workDir ? 'embedded' : 'server'}, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
console.log('| variant | calls | database CPU ms/call | app CPU ms/call |\n| --- | ---: | ---: | ---: |');
for (const [variant, t] of totals) {
  console.log(`| ${variant} | ${t.calls} | ${(t.dbNs / 1e6 / t.calls).toFixed(3)} | ${(t.appUs / 1e3 / t.calls).toFixed(3)} |`);
}
await db.close();
if (workDir) rmSync(workDir, { recursive: true, force: true });
