// `npm run eval [-- --data FILE] [--json FILE] [--candidates FILE] [--rerank-cost] [--tables-used sdk [--tables FILE]]`: replays multi-turn text-to-SQL dialogues (SParC's
// format) through the real /memoryChat, in process on an embedded database in a temporary DATA_DIR,
// with a local answerer that returns each turn's gold SQL, and measures what memory sent upstream.
// One user per database_id, one session per dialogue, dialogues in file order. Then a new user per
// dialogue asks its first question, with the tenant's earlier dialogues promoted as verified pairs
// (docs/verified-pairs.md), each request bounded to its database. The embedder is the
// service's default unless EMBEDDINGS_PROVIDER, EMBEDDINGS_MODEL, EMBEDDINGS_DIMENSIONS,
// OPENAI_API_KEY and OPENAI_BASE_URL in the environment choose another (any OpenAI-compatible server).
// --rerank-cost times a first question's retrieval cut to k by the statement and by the rerank (rerank/cost.ts).
// --tables-used sdk answers as the Denodo AI SDK does: tables_used every view its search considered, here
// every table of the dialogue's database as `database.table` (SParC's tables.json), not only those the SQL reads.
// --candidates writes, per first question with an earlier same-tables turn, the retrieval statement's candidates
// before the rerank, with their features and the gold tables: what scripts/eval/rerank/fit.ts fits on.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createSigner } from 'fast-jwt';
import { buildApp } from '../../services/api/app.js';
import { loadConfig } from '../../services/config/config.js';
import { RERANK_CANDIDATES } from '../../services/core/context/table-links.js';
import { migrate } from '../../services/db/migrate.js';
import { openDatabase } from '../../services/db/pool.js';
import { createProviders } from '../../services/providers/index.js';
import { percentile as percentileOfSorted } from '../bench/load.js';
import {
  type BlockPart,
  carries,
  chanceOfHit,
  loadDialogues,
  loadSchemas,
  parseMemoryBlock,
  tableCoverage,
  tableSetKey,
  viewName,
} from './dialogues.js';
import { type CandidateRecord, candidatesBeforeRerank } from './rerank/candidates.js';
import { rerankCost } from './rerank/cost.js';

const percentile = (values: number[], p: number) =>
  percentileOfSorted(
    [...values].sort((a, b) => a - b),
    p,
  );

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SECRET = 'eval-secret-that-is-at-least-32-characters-long';
const K = 3;

const { values: args } = parseArgs({
  options: {
    data: { type: 'string' },
    json: { type: 'string' },
    candidates: { type: 'string' },
    'rerank-cost': { type: 'boolean' },
    'tables-used': { type: 'string', default: 'none' },
    tables: { type: 'string' },
  },
});
if (args['tables-used'] !== 'none' && args['tables-used'] !== 'sdk') throw new Error('--tables-used: none or sdk');
const dataFile = path.resolve(ROOT, args.data ?? '../shared/data/sparc/dev.json');
const dialogues = loadDialogues(dataFile);

/** --tables-used sdk: each database's tables as the SDK names views, `database.table`. */
const viewsByDatabase = new Map<string, string[]>(
  args['tables-used'] === 'sdk'
    ? loadSchemas(path.resolve(ROOT, args.tables ?? '../shared/data/sparc/tables.json')).map((schema) => [
        schema.db_id,
        schema.table_names_original.map((_table, i) => viewName(schema, i)),
      ])
    : [],
);

// The answerer: each turn's gold SQL (and with --tables-used sdk its database's views), and a record of what memorychat sent.
let gold = '';
let goldDatabase = '';
let lastUpstream: { question?: string; custom_instructions?: string } = {};
const answerer = createServer((req, res) => {
  // memorychat asks an answerer for its /openapi.json at first contact (the list encoding it takes); this one has none.
  if (req.method !== 'POST') return void res.writeHead(404).end();
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    lastUpstream = JSON.parse(raw);
    res.writeHead(200, { 'content-type': 'application/json' });
    const tablesUsed = viewsByDatabase.get(goldDatabase) ?? [];
    res.end(JSON.stringify({ answer: 'Here are the results.', sql_query: gold, tables_used: tablesUsed, execution_result: {} }));
  });
});
await new Promise<void>((r) => answerer.listen(0, '127.0.0.1', r));

const dataDir = mkdtempSync(path.join(tmpdir(), 'memorychat-eval-'));
const EMBEDDER_SETTINGS = ['EMBEDDINGS_PROVIDER', 'EMBEDDINGS_MODEL', 'EMBEDDINGS_DIMENSIONS', 'OPENAI_API_KEY', 'OPENAI_BASE_URL'];
const config = loadConfig({
  ...Object.fromEntries(EMBEDDER_SETTINGS.map((name) => [name, process.env[name]])),
  DATA_DIR: dataDir,
  JWT_SECRET: SECRET,
  ANSWER_URL: `http://127.0.0.1:${(answerer.address() as AddressInfo).port}/answerQuestion`,
  ANSWER_AUTH: 'none',
  RATE_LIMIT_PER_MINUTE: '0',
  LOG_LEVEL: 'silent',
});
const database = await openDatabase(config);
await migrate(database.pool);
const providers = createProviders(config);
const app = await buildApp({ config, db: database.pool, ...providers });
await app.ready();
const sign = createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 86_400_000 });

interface PriorTurn {
  tables: string;
}
const priorByUser = new Map<string, PriorTurn[]>();
/** Each user's stored SQL, oldest first, for --candidates. */
const historyByUser = new Map<string, string[]>();
const followUps = { total: 0, previous: 0, allEarlier: 0 };
const cross = { eligible: 0, hit1: 0, hit3: 0, chance1: 0, chance3: 0, topCoverage: 0, withoutEarlier: 0, withoutMatch: 0 };
const tokens = { first: [] as number[], followUp: [] as number[] };
const parts: Record<BlockPart, number> = { instructions: 0, summary: 0, history: 0, similar: 0, verified: 0, answers: 0 };
/** Each dialogue's session in the first pass, whose turns the second promotes. */
const stored: { user: string; sessionId: string; turns: number }[] = [];
const retrievalMs: number[] = [];
const candidateRecords: CandidateRecord[] = [];
/** --rerank-cost: a first question's retrieval, cut to k by the statement and by the rerank (rerank/cost.ts). */
const statementCutMs: number[] = [];
const rerankCutMs: number[] = [];
const started = performance.now();

for (const dialogue of dialogues) {
  const user = `eval-${dialogue.database_id}`;
  const token = sign({ sub: user });
  const prior = priorByUser.get(user) ?? [];
  let sessionId: string | undefined;
  const earlierSql: string[] = [];
  for (const [j, turn] of dialogue.interaction.entries()) {
    gold = turn.query;
    goldDatabase = dialogue.database_id;
    const identity = { tenantId: 'default', userId: user, roles: [] };
    if (args['rerank-cost'] && j === 0 && prior.length) {
      const cost = await rerankCost({ db: database.pool, embedder: providers.embedder, config }, identity, turn.utterance);
      statementCutMs.push(...cost.statementCut);
      rerankCutMs.push(...cost.rerankCut);
    }
    if (args.candidates && j === 0 && prior.some((p) => p.tables === tableSetKey(turn.query))) {
      const candidates = await candidatesBeforeRerank(
        { db: database.pool, embedder: providers.embedder, config },
        identity,
        turn.utterance,
      );
      candidateRecords.push({
        database_id: dialogue.database_id,
        question: turn.utterance,
        wanted: tableSetKey(turn.query),
        candidates,
        history: historyByUser.get(user) ?? [],
      });
    }
    const res = await app.inject({
      method: 'POST',
      url: '/memoryChat',
      headers: { authorization: `Bearer ${token}` },
      payload: { question: turn.utterance, vdp_database_names: dialogue.database_id, ...(sessionId ? { session_id: sessionId } : {}) },
    });
    if (res.statusCode !== 200) throw new Error(`/memoryChat answered ${res.statusCode}: ${res.body}`);
    const body = res.json();
    sessionId = body.conversation_metadata.conversation_id;
    const upstreamText = `${lastUpstream.question ?? ''}\n${lastUpstream.custom_instructions ?? ''}`;
    const block = parseMemoryBlock(lastUpstream.custom_instructions);
    for (const part of Object.keys(parts) as BlockPart[]) parts[part] += block.tokens[part];
    retrievalMs.push(body.memory_retrieval_time * 1000);
    (j === 0 ? tokens.first : tokens.followUp).push(body.memory_context_used.context_tokens);

    if (j > 0) {
      followUps.total++;
      if (carries(upstreamText, earlierSql.at(-1)!)) followUps.previous++;
      if (earlierSql.every((sql) => carries(upstreamText, sql))) followUps.allEarlier++;
    } else {
      const wanted = tableSetKey(turn.query);
      const good = prior.filter((p) => p.tables === wanted).length;
      if (!prior.length) cross.withoutEarlier++;
      else if (!good) cross.withoutMatch++;
      else {
        cross.eligible++;
        const sent = block.similarSql.map(tableSetKey);
        if (sent[0] === wanted) cross.hit1++;
        if (sent.slice(0, K).includes(wanted)) cross.hit3++;
        cross.topCoverage += tableCoverage(sent[0], wanted);
        cross.chance1 += chanceOfHit(prior.length, good, 1);
        cross.chance3 += chanceOfHit(prior.length, good, K);
      }
    }
    earlierSql.push(turn.query);
  }
  for (const sql of earlierSql) prior.push({ tables: tableSetKey(sql) });
  priorByUser.set(user, prior);
  historyByUser.set(user, [...(historyByUser.get(user) ?? []), ...earlierSql]);
  stored.push({ user, sessionId: sessionId!, turns: dialogue.interaction.length });
}

// A new user per dialogue: their first question, asked with the tenant's earlier dialogues promoted.
const admin = sign({ sub: 'eval-admin', roles: ['memory-admin'] });
const promotedByDatabase = new Map<string, PriorTurn[]>();
const newUsers = { eligible: 0, hit1: 0, hit3: 0, withoutEarlier: 0, withoutMatch: 0 };
for (const [i, dialogue] of dialogues.entries()) {
  const first = dialogue.interaction[0];
  if (first) {
    gold = first.query;
    goldDatabase = dialogue.database_id;
    const res = await app.inject({
      method: 'POST',
      url: '/memoryChat',
      headers: { authorization: `Bearer ${sign({ sub: `eval-new-${i}` })}` },
      payload: { question: first.utterance, vdp_database_names: dialogue.database_id },
    });
    if (res.statusCode !== 200) throw new Error(`/memoryChat answered ${res.statusCode}: ${res.body}`);
    const wanted = tableSetKey(first.query);
    const promoted = promotedByDatabase.get(dialogue.database_id) ?? [];
    if (!promoted.length) newUsers.withoutEarlier++;
    else if (!promoted.some((p) => p.tables === wanted)) newUsers.withoutMatch++;
    else {
      newUsers.eligible++;
      const sent = parseMemoryBlock(lastUpstream.custom_instructions).verifiedSql.map(tableSetKey);
      if (sent[0] === wanted) newUsers.hit1++;
      if (sent.slice(0, K).includes(wanted)) newUsers.hit3++;
    }
  }
  const source = stored[i]!;
  for (let turnNumber = 1; turnNumber <= source.turns; turnNumber++) {
    const res = await app.inject({
      method: 'POST',
      url: '/admin/verified-pairs',
      headers: { authorization: `Bearer ${admin}` },
      payload: { user_id: source.user, session_id: source.sessionId, turn_number: turnNumber },
    });
    if (res.statusCode !== 201) throw new Error(`promoting a turn answered ${res.statusCode}: ${res.body}`);
  }
  promotedByDatabase.set(dialogue.database_id, [
    ...(promotedByDatabase.get(dialogue.database_id) ?? []),
    ...dialogue.interaction.map((t) => ({ tables: tableSetKey(t.query) })),
  ]);
}

await app.close();
await database.close();
answerer.close();
rmSync(dataDir, { recursive: true, force: true });

const share = (n: number, d: number) => (d ? n / d : Number.NaN);
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const allParts = Object.values(parts).reduce((a, b) => a + b, 0);
const figures = {
  data: dataFile,
  embedding_model: providers.embedder.modelId,
  dialogues: dialogues.length,
  turns: retrievalMs.length,
  follow_up_carry: {
    follow_ups: followUps.total,
    previous_sql: share(followUps.previous, followUps.total),
    all_earlier_sql: share(followUps.allEarlier, followUps.total),
  },
  cross_session: {
    questions: cross.eligible,
    hit_at_1: share(cross.hit1, cross.eligible),
    hit_at_3: share(cross.hit3, cross.eligible),
    chance_at_1: share(cross.chance1, cross.eligible),
    chance_at_3: share(cross.chance3, cross.eligible),
    top_turn_table_coverage: share(cross.topCoverage, cross.eligible),
    first_questions_without_earlier_turns: cross.withoutEarlier,
    first_questions_without_same_tables: cross.withoutMatch,
  },
  new_user_verified_pairs: {
    questions: newUsers.eligible,
    top_1: share(newUsers.hit1, newUsers.eligible),
    top_3: share(newUsers.hit3, newUsers.eligible),
    first_questions_without_earlier_pairs: newUsers.withoutEarlier,
    first_questions_without_same_tables: newUsers.withoutMatch,
  },
  memory_block_tokens: {
    first_question: { p50: percentile(tokens.first, 50), p95: percentile(tokens.first, 95) },
    follow_up: { p50: percentile(tokens.followUp, 50), p95: percentile(tokens.followUp, 95) },
    spent_on: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, share(v, allParts)])),
  },
  retrieval_ms: { p50: percentile(retrievalMs, 50), p95: percentile(retrievalMs, 95) },
  seconds: (performance.now() - started) / 1000,
};

console.log(
  `eval: ${figures.dialogues} dialogues, ${figures.turns} turns from ${path.relative(process.cwd(), dataFile)}, embeddings ${figures.embedding_model}`,
);
console.log(
  `follow-up carry (${followUps.total} follow-ups): previous turn's SQL ${pct(figures.follow_up_carry.previous_sql)}, all earlier turns' SQL ${pct(figures.follow_up_carry.all_earlier_sql)}`,
);
console.log(
  `cross-session (${cross.eligible} first questions with an earlier same-tables turn): hit@1 ${pct(figures.cross_session.hit_at_1)} (chance ${pct(figures.cross_session.chance_at_1)}), hit@3 ${pct(figures.cross_session.hit_at_3)} (chance ${pct(figures.cross_session.chance_at_3)}), top turn's table coverage ${pct(figures.cross_session.top_turn_table_coverage)}`,
);
console.log(
  `new users' first questions (${newUsers.eligible} with a verified pair over the gold tables among the tenant's earlier dialogues): such a pair in memory at top-1 ${pct(figures.new_user_verified_pairs.top_1)}, within top-3 ${pct(figures.new_user_verified_pairs.top_3)}`,
);
const t = figures.memory_block_tokens;
console.log(
  `memory-block tokens: first questions p50 ${t.first_question.p50} p95 ${t.first_question.p95}; follow-ups p50 ${t.follow_up.p50} p95 ${t.follow_up.p95}`,
);
console.log(
  `  spent on: ${Object.entries(t.spent_on)
    .map(([k, v]) => `${k} ${pct(v)}`)
    .join(', ')}`,
);
console.log(`retrieval time: p50 ${figures.retrieval_ms.p50.toFixed(2)} ms, p95 ${figures.retrieval_ms.p95.toFixed(2)} ms`);
if (args['rerank-cost']) {
  const p = (values: number[], q: number) => percentile(values, q).toFixed(2);
  console.log(
    `rerank cost (${rerankCutMs.length} retrievals each, interleaved): statement's k p50 ${p(statementCutMs, 50)} p95 ${p(statementCutMs, 95)} ms; best ${RERANK_CANDIDATES} reranked to k p50 ${p(rerankCutMs, 50)} p95 ${p(rerankCutMs, 95)} ms`,
  );
}
if (args.candidates) writeFileSync(args.candidates, `${JSON.stringify(candidateRecords)}\n`);
if (args.json) writeFileSync(args.json, `${JSON.stringify(figures, null, 2)}\n`);
