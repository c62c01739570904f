// Realistic bench data: SParC-like questions and SQL, answers of a realistic size, users that each
// work on a few databases (so their embeddings cluster), conversations of 1-5 turns.
import { readFileSync } from 'node:fs';
import { embeddedTurnText } from '../../services/core/turns/turn-embedding.js';

export const SPARC_DEV = process.env.BENCH_SPARC ?? '/work/shared/data/sparc/dev.json';
export const TENANT = 'default';

export interface SparcTurn {
  question: string;
  sql: string;
}
export interface SparcInteraction {
  database: string;
  turns: SparcTurn[];
}

let cached: SparcInteraction[] | undefined;
export function loadSparc(): SparcInteraction[] {
  if (cached) return cached;
  const raw = JSON.parse(readFileSync(SPARC_DEV, 'utf8')) as {
    database_id: string;
    interaction: { utterance: string; query: string }[];
  }[];
  cached = raw
    .map((item) => ({
      database: item.database_id,
      turns: item.interaction.map((t) => ({ question: t.utterance.trim(), sql: t.query.trim() })),
    }))
    .filter((i) => i.turns.length > 0);
  return cached;
}

/** Small, fast, seeded PRNG (mulberry32): every run generates the same data. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

const NAMES = ['Smith', 'Garcia', 'Chen', 'Okafor', 'Novak', 'Silva', 'Kim', 'Haddad', 'Rossi', 'Dubois'];
const CITIES = ['Boston', 'Lyon', 'Osaka', 'Lagos', 'Porto', 'Austin', 'Seoul', 'Krakow'];

/**
 * A question as a user would vary it: numbers and quoted values change, some get a lead-in.
 * Keeps the SParC wording (and its follow-up phenomena: "those", "what about ...").
 */
export function varyQuestion(r: () => number, q: string): string {
  let out = q.replace(/\b\d+\b/g, (d) => (r() < 0.6 ? String(Math.max(1, Math.round(Number(d) * (0.5 + r())))) : d));
  out = out.replace(/"[^"]+"|'[^']+'/g, (m) => (r() < 0.5 ? `"${pick(r, r() < 0.5 ? NAMES : CITIES)}"` : m));
  const lead = r();
  if (lead < 0.08) out = `Now, ${out[0]!.toLowerCase()}${out.slice(1)}`;
  else if (lead < 0.14) out = `Can you tell me: ${out}`;
  return out;
}

const REGIONS = ['north', 'south', 'east', 'west', 'central', 'coastal', 'alpine', 'metro'];

/**
 * One stored turn as a user asked it: the SParC turn worded as varyQuestion does, narrowed by the
 * year, region or threshold a follow-up adds, in both its question and its SQL. Real users' turns
 * differ in exactly these (and the answer follows the question: answerFor), so every turn's
 * embedded text is its own while it stays close to its siblings'; repeating a few texts instead
 * left thousands of identical vectors, which no real history has and which an approximate index cannot
 * tell apart (docs/performance.md, "Recall of the approximate path").
 */
export function turnVariant(r: () => number, t: SparcTurn): SparcTurn {
  const { phrase, condition } = narrowing(r);
  return { question: withPhrase(varyQuestion(r, t.question), phrase), sql: withCondition(t.sql, condition) };
}

/** The year, region or threshold a follow-up narrows a question by: its words and its SQL condition. */
export function narrowing(r: () => number): { phrase: string; condition: string } {
  const year = 1995 + Math.floor(r() * 31);
  const region = pick(r, REGIONS);
  const n = 2 + Math.floor(r() * 998);
  const forms: [string, string][] = [
    [`in ${year}`, `year = ${year}`],
    [`for the ${region} region, above ${n}`, `region = '${region}' AND amount > ${n}`],
    [`since ${year}, at least ${n}`, `year >= ${year} AND amount >= ${n}`],
    [`in the ${region} region in ${year}`, `region = '${region}' AND year = ${year}`],
    [`below ${n} in ${year}`, `amount < ${n} AND year = ${year}`],
  ];
  const [phrase, condition] = pick(r, forms);
  return { phrase, condition };
}

/** `question` narrowed by `phrase`, still a question. */
export function withPhrase(question: string, phrase: string): string {
  return `${question.replace(/[?.!\s]+$/, '')} ${phrase}?`;
}

/** `sql` with `condition` ANDed into its (first) WHERE, or a WHERE of its own before GROUP/ORDER/LIMIT. */
function withCondition(sql: string, condition: string): string {
  if (/\bWHERE\b/i.test(sql)) return sql.replace(/\bWHERE\b/i, `WHERE ${condition} AND`);
  const tail = sql.search(/\b(GROUP|ORDER|LIMIT|INTERSECT|UNION|EXCEPT)\b/i);
  return tail < 0 ? `${sql} WHERE ${condition}` : `${sql.slice(0, tail)}WHERE ${condition} ${sql.slice(tail)}`;
}

export function tablesOf(sql: string): string[] {
  const names = new Set<string>();
  for (const m of sql.matchAll(/\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)/gi)) names.add(m[1]!.toLowerCase());
  return [...names];
}

/** What the instant answerer returns for a question: realistic size (answer ~300 chars, 3 result rows). */
export function answerFor(question: string, sql: string | undefined) {
  const query = sql ?? 'SELECT count(*) FROM orders';
  const tables = tablesOf(query);
  let h = 0;
  for (let i = 0; i < question.length; i++) h = (Math.imul(h, 31) + question.charCodeAt(i)) >>> 0;
  const n = (h % 40) + 3;
  const rows = [0, 1, 2].map((i) => ({
    [`Row ${i + 1}`]: [
      { columnName: 'name', value: NAMES[(h + i) % NAMES.length] },
      { columnName: 'value', value: String((h >>> (i * 3)) % 10_000) },
    ],
  }));
  return {
    answer:
      `The query returned ${n} rows. The first ones are ${NAMES[h % NAMES.length]} (${h % 977}), ` +
      `${NAMES[(h + 1) % NAMES.length]} (${h % 613}) and ${NAMES[(h + 2) % NAMES.length]} (${h % 421}). ` +
      `The result comes from ${tables.join(', ') || 'the selected views'}; values are as of the latest load ` +
      `and are rounded to whole units where the source column is numeric.`,
    sql_query: query,
    query_explanation: `Reads ${tables.join(', ') || 'the data'} and returns the requested columns.`,
    tables_used: tables,
    execution_result: Object.assign({}, ...rows),
    related_questions: [`How many ${tables[0] ?? 'rows'} are there?`],
    tokens: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    sql_execution_time: 0.001,
    vector_store_search_time: 0,
    llm_time: 0,
    total_execution_time: 0.001,
  };
}
export type InstantAnswer = ReturnType<typeof answerFor>;

/**
 * One of `turns`, varied (turnVariant) until the text it is embedded by is not in `seen`, which then
 * holds it: a user's stored turns each get a vector of their own, as real histories do.
 */
export function distinctTurn(r: () => number, turns: readonly SparcTurn[], seen: Set<string>) {
  for (;;) {
    const t = turnVariant(r, pick(r, turns));
    const answer = answerFor(t.question, t.sql);
    const text = turnEmbeddingText(t.question, answer);
    if (seen.has(text)) continue;
    seen.add(text);
    return { ...t, answer, text };
  }
}

/** The text a turn is embedded by, exactly as the service builds it. */
export function turnEmbeddingText(question: string, a: InstantAnswer): string {
  return embeddedTurnText({ question, sqlQuery: a.sql_query, tablesUsed: a.tables_used, answer: a.answer });
}

export function userId(u: number): string {
  return `bench-user-${String(u).padStart(5, '0')}`;
}

/** Each user works on 2-3 SParC databases: their stored turns cluster there. */
export function userDatabases(u: number): string[] {
  const sparc = loadSparc();
  const dbs = [...new Set(sparc.map((i) => i.database))].sort();
  const r = rng(1000 + u);
  const count = 2 + Math.floor(r() * 2);
  const out = new Set<string>();
  while (out.size < count) out.add(pick(r, dbs));
  return [...out];
}

export function interactionsFor(dbs: string[]): SparcInteraction[] {
  return loadSparc().filter((i) => dbs.includes(i.database));
}

/** A conversation a load client plays: one SParC interaction of the user's databases, varied. */
export interface Conversation {
  user: number;
  database: string;
  questions: string[];
  sqls: string[];
}

export function conversationStream(seed: number, users: number): () => Conversation {
  const r = rng(seed);
  return () => {
    const user = Math.floor(r() * users);
    const interaction = pick(r, interactionsFor(userDatabases(user)));
    const questions = interaction.turns.map((t) => varyQuestion(r, t.question));
    return { user, database: interaction.database, questions, sqls: interaction.turns.map((t) => t.sql) };
  };
}
