// `npm run eval:denodo [-- --data FILE] [--tables FILE] [--scope database|all] [--release 0.5|0.13|1.2.1|1.4] [--json FILE]` (MEMORY_* settings from
// the environment): replays
// SParC dialogues through the real /memoryChat (in process, embedded database, default settings:
// MEMORY_AUGMENTATION=instructions, ANSWER_AUTH=forward) in front of the Denodo AI SDK stand-in
// (test/support/fakes/denodo-sdk-stand-in.ts), whose views are the SParC schemas (`database.table`, columns
// described by their natural-language names). Its SQL writer is perfect but bound to the views it is
// given: a turn gets its gold SQL when the gold tables are among them, no SQL otherwise. Foreign keys
// are the views' associations, which the SDK adds to the views its search found.
// It prints the share of follow-ups whose request reached the SDK with the gold tables among its
// views: before (the SDK's view search over `question` alone, as without use_views) and after (with
// the use_views memorychat sends). `--scope database` sends each dialogue's database as
// vdp_database_names; `all` sends none (every SParC database is searched). `--release` is the SDK release
// the stand-in behaves as (the newest unless named); memorychat is not told it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createSigner } from 'fast-jwt';
import { buildApp } from '../../services/api/app.js';
import { loadConfig } from '../../services/config/config.js';
import { sqlIdentifiers } from '../../services/core/search-terms/sql-identifiers.js';
import { migrate } from '../../services/db/migrate.js';
import { openDatabase } from '../../services/db/pool.js';
import { createProviders } from '../../services/providers/index.js';
import {
  basicAuth,
  SDK_RELEASES,
  type SdkRelease,
  type SdkView,
  startDenodoSdkStandIn,
} from '../../test/support/fakes/denodo-sdk-stand-in.js';
import { percentile as percentileOfSorted } from '../bench/load.js';
import { loadDialogues, loadSchemas, type SpiderSchema, viewName } from './dialogues.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SECRET = 'eval-secret-that-is-at-least-32-characters-long';

const { values: args } = parseArgs({
  options: {
    data: { type: 'string' },
    tables: { type: 'string' },
    scope: { type: 'string', default: 'database' },
    release: { type: 'string', default: '1.4' },
    json: { type: 'string' },
  },
});
if (args.scope !== 'database' && args.scope !== 'all') throw new Error('--scope: database or all');
if (!(SDK_RELEASES as readonly string[]).includes(args.release!)) throw new Error(`--release: one of ${SDK_RELEASES.join(', ')}`);
const release = args.release as SdkRelease;
const dataFile = path.resolve(ROOT, args.data ?? '../shared/data/sparc/dev.json');
const tablesFile = path.resolve(ROOT, args.tables ?? '../shared/data/sparc/tables.json');
const dialogues = loadDialogues(dataFile);

const schemas = loadSchemas(tablesFile);
/** A foreign key joins two tables: in Denodo, an association between their views. */
function associationsOf(schema: SpiderSchema, table: number): string[] {
  const tableOf = (column: number) => schema.column_names_original[column]?.[0] ?? -1;
  const joined = schema.foreign_keys.flatMap(([a, b]) => (tableOf(a) === table ? [tableOf(b)] : tableOf(b) === table ? [tableOf(a)] : []));
  return [...new Set(joined.filter((t) => t >= 0 && t !== table).map((t) => viewName(schema, t)))];
}
const views: SdkView[] = schemas.flatMap((schema) =>
  schema.table_names_original.map((_table, i) => ({
    name: viewName(schema, i),
    description: schema.table_names[i],
    associations: associationsOf(schema, i),
    columns: schema.column_names_original
      .map(([t, name], j) => ({ t, name, description: schema.column_names[j]?.[1] }))
      .filter((c) => c.t === i)
      .map(({ name, description }) => ({ name, description })),
  })),
);

// The gold SQL of the turn being asked, and the views it reads.
let gold = { sql: '', views: [] as string[] };
const goldViews = (database: string, sql: string) => [...new Set(sqlIdentifiers(sql).tables.map((t) => `${database}.${t}`.toLowerCase()))];

const sdk = await startDenodoSdkStandIn({
  release,
  views,
  users: { analyst: { password: 'analyst-pw', views: views.map((v) => v.name) } },
  writeSql: (_question, given) => (gold.views.every((v) => given.includes(v)) ? gold : undefined),
});

const dataDir = mkdtempSync(path.join(tmpdir(), 'memorychat-denodo-replay-'));
const config = loadConfig({
  // Memory settings may be varied from the environment, e.g. MEMORY_MAX_CONTEXT_TOKENS=4000.
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('MEMORY_'))),
  DATA_DIR: dataDir,
  JWT_SECRET: SECRET,
  ANSWER_URL: sdk.answerUrl,
  RATE_LIMIT_PER_MINUTE: '0',
  LOG_LEVEL: 'silent',
});
const database = await openDatabase(config);
await migrate(database.pool);
const app = await buildApp({ config, db: database.pool, ...createProviders(config) });
await app.ready();
const sign = createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 86_400_000 });
const credentials = basicAuth('analyst', 'analyst-pw');

const counts = { followUps: 0, before: 0, after: 0, answeredAfter: 0 };
const followUpTokens: number[] = [];
let truncated = 0;
const sdkInputTokens: number[] = [];
const started = performance.now();

for (const dialogue of dialogues) {
  const token = sign({ sub: `replay-${dialogue.database_id}` });
  let sessionId: string | undefined;
  for (const [j, turn] of dialogue.interaction.entries()) {
    const callsBefore = sdk.calls.length;
    gold = { sql: turn.query, views: goldViews(dialogue.database_id, turn.query) };
    const res = await app.inject({
      method: 'POST',
      url: '/memoryChat',
      headers: { authorization: `Bearer ${token}`, 'x-upstream-authorization': credentials },
      payload: {
        question: turn.utterance,
        ...(sessionId ? { session_id: sessionId } : {}),
        ...(args.scope === 'database' ? { vdp_database_names: dialogue.database_id.toLowerCase() } : {}),
      },
    });
    if (res.statusCode !== 200) throw new Error(`/memoryChat answered ${res.statusCode}: ${res.body}`);
    const body = res.json();
    sessionId = body.conversation_metadata.conversation_id;
    if (j === 0) continue;
    // No new call: the SDK answered 404 (its view search found nothing), which memorychat shows as the answer.
    const call = sdk.calls.length > callsBefore ? sdk.calls.at(-1)! : { searched: [] as string[], views: [] as string[] };
    counts.followUps++;
    if (gold.views.every((v) => call.searched.includes(v))) counts.before++;
    if (gold.views.every((v) => call.views.includes(v))) counts.after++;
    if (body.sql_query) counts.answeredAfter++;
    followUpTokens.push(body.memory_context_used.context_tokens);
    if (body.memory_context_used.context_truncated) truncated++;
    sdkInputTokens.push(body.tokens?.input_tokens ?? 0);
  }
}

await app.close();
await database.close();
await sdk.close();
rmSync(dataDir, { recursive: true, force: true });

const pct = (n: number) => `${((100 * n) / counts.followUps).toFixed(1)}%`;
const percentile = (values: number[], p: number) =>
  percentileOfSorted(
    [...values].sort((a, b) => a - b),
    p,
  );
const figures = {
  data: dataFile,
  scope: args.scope,
  release,
  views: views.length,
  dialogues: dialogues.length,
  follow_ups: counts.followUps,
  gold_tables_among_views: { before: counts.before / counts.followUps, after: counts.after / counts.followUps },
  answered_with_sql_after: counts.answeredAfter / counts.followUps,
  memory_block_tokens_follow_up: {
    p50: percentile(followUpTokens, 50),
    p95: percentile(followUpTokens, 95),
    max: Math.max(...followUpTokens),
    truncated: truncated / counts.followUps,
  },
  sdk_input_tokens_follow_up: { p50: percentile(sdkInputTokens, 50), p95: percentile(sdkInputTokens, 95) },
  seconds: (performance.now() - started) / 1000,
};
console.log(
  `denodo replay: ${dialogues.length} dialogues, ${counts.followUps} follow-ups, ${views.length} views, SDK ${release}, scope ${args.scope} (vdp_database_names ${args.scope === 'database' ? "= the dialogue's database" : 'unset'})`,
);
console.log(
  `follow-ups whose SDK request has the gold tables among its views: before (question only) ${pct(counts.before)}, after (with use_views) ${pct(counts.after)}`,
);
console.log(
  `memory block tokens per follow-up (MEMORY_MAX_CONTEXT_TOKENS ${config.MEMORY_MAX_CONTEXT_TOKENS}): p50 ${figures.memory_block_tokens_follow_up.p50}, p95 ${figures.memory_block_tokens_follow_up.p95}, max ${figures.memory_block_tokens_follow_up.max}, cut ${pct(truncated)}; stand-in SDK input tokens (4 prompts): p50 ${figures.sdk_input_tokens_follow_up.p50}, p95 ${figures.sdk_input_tokens_follow_up.p95}`,
);
if (args.json) writeFileSync(args.json, `${JSON.stringify(figures, null, 2)}\n`);
