// `npm run bench -- ann-recall [--embedded] [--background-users 100] [--turns-per-user 1000]
// [--heavy 20000] [--queries 200] [--database mc_bench_ann_recall] [--keep] [--builds 8 --probes 30,35,40]`: recall@20 of the
// approximate (IVFFlat) nearest turns against exact search (docs/performance.md, "Recall"), on the
// PostgreSQL server or, with --embedded, on PGlite.
// The table holds background users, a heavy user, a user just past MEMORY_EXACT_SEARCH_MAX_TURNS and a
// small user; each user's turns are SParC turns of their own databases, every one varied (turnVariant:
// no two turns alike) and embedded with its SQL and answer as the service embeds a turn. For each of
// the three users, the 20 nearest by /memory/search's statement (vector only, no floor) are compared
// between exact search and the approximate path, forced with exactSearchMaxTurns and annRowCost 0 (at the
// probes the service takes for the user's share of the index); each row
// also says which path the service takes for that user (MEMORY_EXACT_SEARCH_MAX_TURNS and the index
// rows it would read: hybrid-rank.ts, ANN_ROW_COST) and so the recall it serves. With --builds, the
// index is then built again that many times (k-means draws its lists anew each time) and the heavy
// user's recall@20 read from the nearest-turns function at each of --probes (the service's own is
// IVF_PROBES / √share), with which third of the questions the misses came from. Prints Markdown
// tables and the load average.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import pgvector from 'pgvector';
import type { Database } from '../../services/db/pool.js';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import { searchTurns } from '../../services/db/repositories/turns.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { distinctTurn, interactionsFor, rng, TENANT, userDatabases } from './data.js';
import { openBenchDatabase } from './database.js';
import { percentile } from './load.js';
import { explainScoped, ranAnnFunction } from './retrieval-plan.js';
import { DIMENSIONS, EMBEDDING_MODEL } from './seed.js';
import { recallAgainstExact, recallQuestions, vectorSearch } from './served-recall.js';
import { dropDatabase, openServerDatabase, recreateDatabase } from './server-databases.js';

const { values: args } = parseArgs({
  options: {
    embedded: { type: 'boolean', default: false },
    'background-users': { type: 'string', default: '100' },
    'turns-per-user': { type: 'string', default: '1000' },
    heavy: { type: 'string', default: '20000' },
    queries: { type: 'string', default: '200' },
    // Leave the server database in place, to inspect its plans.
    keep: { type: 'boolean', default: false },
    // The server database's name: one per engineer on a shared server.
    database: { type: 'string', default: 'mc_bench_ann_recall' },
    builds: { type: 'string', default: '0' },
    probes: { type: 'string', default: '30,35,40' },
  },
});
/** MEMORY_EXACT_SEARCH_MAX_TURNS's default: the "just past" user has a quarter more. */
const THRESHOLD = 2000;
const SESSION_TURNS = 50;
const random = rng(27);

/** Every stored turn's embedded text, so that no two turns share one (turnVariant draws again). */
const seen = new Set<string>();

/** `turns` turns of `user`, each a SParC turn of the user's own databases (`dbs`), varied, with its answer. */
async function seedUser(pool: pg.Pool, user: string, dbs: string[], turns: number): Promise<void> {
  const mine = interactionsFor(dbs).flatMap((i) => i.turns);
  for (let start = 0; start < turns; start += SESSION_TURNS) {
    const sessionId = randomUUID();
    const n = Math.min(SESSION_TURNS, turns - start);
    await pool.query(
      `INSERT INTO sessions (tenant_id, user_id, session_id, session_name, created_at, updated_at, expires_at, turn_count, last_turn_number)
       VALUES ($1, $2, $3, 'history', now(), now(), now() + interval '7 days', $4, $4)`,
      [TENANT, user, sessionId, n],
    );
    const rows = Array.from({ length: n }, () => {
      const t = distinctTurn(random, mine, seen);
      return { ...t, vector: pgvector.toSql(embedText(t.text, DIMENSIONS)!) };
    });
    await pool.query(
      // Every turn in the approximate index (migration 017's mark), so that forcing the path measures the index over all users' rows.
      `INSERT INTO turns (tenant_id, user_id, session_id, turn_number, created_at, status, question, answer, sql_query, tables_used,
                          embedding, embedding_model, ann_indexed)
       SELECT $1, $2, $3, r.n, now(), 'ok', r.q, r.a, r.sql, r.tables::text[], r.v::vector, $4, true
       FROM unnest($5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[]) AS r(n, q, a, sql, tables, v)`,
      [
        TENANT,
        user,
        sessionId,
        EMBEDDING_MODEL,
        rows.map((_, i) => i + 1),
        rows.map((r) => r.question),
        rows.map((r) => r.answer.answer),
        rows.map((r) => r.sql),
        rows.map((r) => `{${r.answer.tables_used.join(',')}}`),
        rows.map((r) => r.vector),
      ],
    );
  }
}

async function open(): Promise<{ db: Database; done: () => Promise<void> }> {
  if (args.embedded) {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'memorychat-ann-recall-'));
    const db = await openBenchDatabase(dataDir, true);
    return { db, done: () => rm(dataDir, { recursive: true, force: true }) };
  }
  const name = args.database!;
  await recreateDatabase(name);
  const db = await openServerDatabase(name, 1, true);
  return { db, done: async () => (args.keep ? undefined : dropDatabase(name)) };
}

const { db, done } = await open();
const users = {
  heavy: { id: 'heavy', turns: Number(args.heavy), dbs: userDatabases(1001) },
  past: { id: 'just-past', turns: Math.round(THRESHOLD * 1.25), dbs: userDatabases(1002) },
  small: { id: 'small', turns: 100, dbs: userDatabases(1003) },
};
const index = 'turns_ann_local_hash_v2_384';
const started = performance.now();
// Seeded without the approximate index, then built as the retention cleanup's upkeep builds it (√rows lists).
await db.pool.query(`DROP INDEX ${index}`);
for (let u = 0; u < Number(args['background-users']); u++)
  await seedUser(db.pool, `background-${u}`, userDatabases(u), Number(args['turns-per-user']));
for (const u of Object.values(users)) await seedUser(db.pool, u.id, u.dbs, u.turns);
const seeded = performance.now();
const built = (await db.scoped.maintainAnnIndexes()).find((s) => s.index === index)!;
const indexed = performance.now();
if (!args.embedded) await db.pool.query('ANALYZE sessions; ANALYZE turns');
const { rows: size } = await db.pool.query<{ turns: number; bytes: string }>(
  `SELECT (SELECT count(*)::int FROM turns) AS turns, pg_size_pretty(pg_relation_size($1::regclass)) AS bytes`,
  [index],
);

/** Whether the statement for `user` (as a generic plan) ran the function that reads the approximate index. */
async function usesIndex(user: string, exactSearchMaxTurns: number, annRowCost?: number): Promise<boolean> {
  const identity = { tenantId: TENANT, userId: user, roles: [] };
  const { plan } = await explainScoped(db.pool, identity, (q) =>
    searchTurns(q, vectorSearch(user, 'How many singers are there?', { exactSearchMaxTurns, annRowCost })),
  );
  return ranAnnFunction(plan);
}

const results = [];
for (const [label, u] of Object.entries(users)) {
  // The approximate path forced (threshold 1, annRowCost 0) whatever the user's share of the index.
  const {
    recall,
    exactMs,
    pathMs: annMs,
  } = await recallAgainstExact(db, u.id, u.dbs, Number(args.queries), random, {
    exactSearchMaxTurns: 1,
    annRowCost: 0,
  });
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  results.push({
    label,
    turns: u.turns,
    recall,
    exactP50: percentile(sorted(exactMs), 50),
    annP50: percentile(sorted(annMs), 50),
    annPlan: await usesIndex(u.id, 1, 0),
    servicePath: (await usesIndex(u.id, THRESHOLD)) ? 'IVFFlat' : 'exact',
  });
}
/**
 * Recall@20 of the nearest-turns function for `user` at each of `probes`, over `queries`
 * recallQuestions, against exact search over the same rows, tie-aware by distance; and how many of
 * the missed turns each third of the questions (own, own, any) lost.
 */
async function functionRecall(q: Queryable, user: { id: string; dbs: string[] }, probes: number[]) {
  const vectors = recallQuestions(user.dbs, Number(args.queries), rng(99)).map((question) =>
    pgvector.toSql(embedText(question, DIMENSIONS)!),
  );
  const exact: number[][] = [];
  for (const v of vectors) {
    const { rows } = await q.query<{ d: number }>(
      `SELECT 1 + (embedding::vector(${DIMENSIONS}) <#> $1::vector(${DIMENSIONS})) AS d FROM turns
       WHERE tenant_id = $2 AND user_id = $3 AND embedding_model = $4 ORDER BY d LIMIT 20`,
      [v, TENANT, user.id, EMBEDDING_MODEL],
    );
    exact.push(rows.map((r) => Number(r.d)));
  }
  const found = [];
  for (const p of probes) {
    let hits = 0;
    let wanted = 0;
    const lost = [0, 0, 0];
    const ms: number[] = [];
    for (const [i, v] of vectors.entries()) {
      const started = performance.now();
      const { rows } = await q.query<{ d: number }>(
        `SELECT distance AS d FROM nearest_turns_local_hash_v2_384($1, $2, $3::vector, 200, $4) ORDER BY distance LIMIT 20`,
        [TENANT, user.id, v, p],
      );
      ms.push(performance.now() - started);
      const cutoff = exact[i]!.at(-1) ?? 1;
      const hit = Math.min(exact[i]!.length, rows.filter((r) => Number(r.d) <= cutoff + 1e-9).length);
      hits += hit;
      wanted += exact[i]!.length;
      lost[i % 3]! += exact[i]!.length - hit;
    }
    found.push({
      probes: p,
      recall: wanted ? hits / wanted : 1,
      p50: percentile(
        [...ms].sort((a, b) => a - b),
        50,
      ),
      lost,
    });
  }
  return found;
}

const probes = args.probes!.split(',').map(Number);
const builds = [];
for (let b = 0; b < Number(args.builds); b++) {
  await db.pool.query(`DROP INDEX ${index}`);
  const lists = (await db.scoped.maintainAnnIndexes()).find((s) => s.index === index)!.rebuiltWith;
  builds.push({ lists, found: await functionRecall(db.scoped.asUser({ tenantId: TENANT, userId: users.heavy.id }), users.heavy, probes) });
}
await db.close();
await done();

const loadavg = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(
  `database: ${args.embedded ? 'embedded PGlite' : 'PostgreSQL server'}; ${size[0]!.turns} turns of ${Number(args['background-users']) + 3} users; ` +
    `seeded in ${((seeded - started) / 1000).toFixed(0)} s, IVFFlat index built with ${built.rebuiltWith} lists in ${((indexed - seeded) / 1000).toFixed(1)} s (${size[0]!.bytes}); ` +
    `${args.queries} queries per user; load average ${loadavg}`,
);
console.log('');
console.log(
  '| user | turns | recall@20, IVFFlat vs exact | exact p50 ms | IVFFlat p50 ms | IVFFlat path read the index | path the service takes | recall@20 served |',
);
console.log('| --- | ---: | ---: | ---: | ---: | --- | --- | ---: |');
for (const r of results) {
  console.log(
    `| ${r.label} | ${r.turns} | ${r.recall.toFixed(3)} | ${r.exactP50.toFixed(2)} | ${r.annP50.toFixed(2)} | ${r.annPlan ? 'yes' : 'NO'} | ${r.servicePath} | ${(r.servicePath === 'IVFFlat' ? r.recall : 1).toFixed(3)} |`,
  );
}
if (builds.length) {
  console.log('');
  console.log(
    `The heavy user's recall@20 from the nearest-turns function, ${builds.length} builds (missed turns from own / own / other-database questions):`,
  );
  console.log('');
  console.log(`| build | lists | ${probes.map((p) => `${p} probes`).join(' | ')} |`);
  console.log(`| ---: | ---: | ${probes.map(() => '---').join(' | ')} |`);
  for (const [b, build] of builds.entries()) {
    const cells = build.found.map((f) => `${f.recall.toFixed(3)}, ${f.p50.toFixed(1)} ms (${f.lost.join('/')})`);
    console.log(`| ${b + 1} | ${build.lists} | ${cells.join(' | ')} |`);
  }
}
