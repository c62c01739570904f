// `node --import tsx scripts/eval/rerank/schema-fit.ts --fit SPARC.json [--check OTHER.json ...] [--from history|candidates]`:
// the rerank ideas beyond fit.ts's features of each candidate's own SQL, measured on the candidates
// `npm run eval -- --candidates FILE` wrote. The question's words are linked to tables through a
// schema learned from SQL (table-links.ts: a table's name, the columns read with it, the literal
// values compared with them), from the user's whole stored history (--from history, the default) or
// from the candidates' own SQL only (--from candidates, what the service can learn without another read).
// The features, besides the fused score, each 0 when no word of the question links to any table:
//   unlinked:  the share of the candidate's tables that no word links to;
//   linkShare: the share of the words' links (each word's 1 split among the tables it links to) on its tables;
//   wordCover: the share of the linking words that link to one of its tables;
//   first:     the candidate is its session's first question, standalone, rather than a follow-up.
// Each idea's weights are searched on a grid for hit@1 (then hit@3) on one half of the --fit file's
// databases (alternate ids in sorted order) and checked on the other half and on every --check file;
// the service's rule, with no weight, is reported first.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type LearnedSchema, learnSchema, names, questionStems } from '../../../services/core/context/table-links.js';
import type { CandidateRecord } from './candidates.js';
import { rerankByScore } from './similar-rerank.js';

const { values: args } = parseArgs({
  options: { fit: { type: 'string' }, check: { type: 'string', multiple: true }, from: { type: 'string' } },
});
/** Learn the schema from the user's whole history (`history`) or from the candidates' own SQL only (`candidates`). */
const from = args.from ?? 'history';
if (!args.fit) throw new Error('--fit FILE is required');
const K = 3;

/**
 * Per word of the question that points to any table of the schema (table-links.ts, linkedTables), the
 * tables it points to; and per table, the words' weight on it, each word's 1 shared equally among its tables.
 */
function wordLinks(question: string, schema: LearnedSchema) {
  const values = question
    .normalize('NFKC')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length >= 3);
  const words = [
    ...questionStems(question).map((stem) => [...schema].filter(([, e]) => [...e.identifiers].some((id) => names([stem], id)))),
    ...values.map((w) => [...schema].filter(([, e]) => e.values.has(w))),
  ]
    .map((linked) => linked.map(([t]) => t))
    .filter((linked) => linked.length);
  const links = new Map<string, number>();
  for (const linked of words) for (const t of linked) links.set(t, (links.get(t) ?? 0) + 1 / linked.length);
  return { links, words };
}
const MAX_FUSED = 2 / 61;

type Features = { fused: number; linkShare: number; unlinked: number; wordCover: number; first: number };
interface Prepared {
  record: CandidateRecord;
  features: Features[];
}

function prepare(record: CandidateRecord): Prepared {
  const schema = learnSchema(from === 'history' ? record.history : record.candidates.map((c) => c.sql_query));
  const { links, words } = wordLinks(record.question, schema);
  const total = [...links.values()].reduce((a, b) => a + b, 0);
  return {
    record,
    features: record.candidates.map((c) => {
      const tables = c.tables ? c.tables.split(',') : [];
      return {
        fused: Math.min(c.score % 1, MAX_FUSED) / MAX_FUSED,
        linkShare: total ? tables.reduce((s, t) => s + (links.get(t) ?? 0), 0) / total : 0,
        unlinked: total && tables.length ? tables.filter((t) => !links.has(t)).length / tables.length : 0,
        wordCover: words.length ? words.filter((w) => tables.some((t) => w.includes(t))).length / words.length : 0,
        first: c.turn_number === 1 ? 1 : 0,
      };
    }),
  };
}

const load = (file: string): Prepared[] =>
  (JSON.parse(readFileSync(file, 'utf8')) as CandidateRecord[]).map((r) =>
    prepare({ ...r, candidates: r.candidates.map((c) => ({ ...c, created_at: new Date(c.created_at) })) }),
  );

type Weights = Partial<Record<keyof Features, number>>;
function hits(set: Prepared[], w: Weights) {
  let hit1 = 0;
  let hit3 = 0;
  for (const p of set) {
    const scores = p.features.map((f) => (Object.keys(w) as (keyof Features)[]).reduce((s, n) => s + w[n]! * f[n], f.fused));
    const sent = rerankByScore(p.record.candidates, scores, K).map((c) => c.tables);
    if (sent[0] === p.record.wanted) hit1++;
    if (sent.includes(p.record.wanted)) hit3++;
  }
  return { hit1, hit3, n: set.length };
}

const GRID = Array.from({ length: 21 }, (_, i) => Math.round((-1 + i * 0.1) * 10) / 10);
/** Every combination of the idea's weights on GRID; the best hit@1, then hit@3, then the smallest weights. */
function search(set: Prepared[], names: (keyof Features)[]): Weights {
  let best: Weights = Object.fromEntries(names.map((n) => [n, 0]));
  let bestValue = -Infinity;
  const visit = (i: number, w: Weights) => {
    if (i === names.length) {
      const h = hits(set, w);
      const v = h.hit1 * 1000 + h.hit3 - Object.values(w).reduce((a, b) => a + Math.abs(b!), 0) / 100;
      if (v > bestValue) [best, bestValue] = [{ ...w }, v];
      return;
    }
    for (const g of GRID) visit(i + 1, { ...w, [names[i]!]: g });
  };
  visit(0, {});
  return best;
}

const fitSet = load(args.fit);
const checks = (args.check ?? []).map((file) => ({ file, set: load(file) }));
const databases = [...new Set(fitSet.map((p) => p.record.database_id))].sort();
const halves = [0, 1].map((h) => fitSet.filter((p) => databases.indexOf(p.record.database_id) % 2 === h));
const show = (set: Prepared[], w: Weights) => {
  const h = hits(set, w);
  const pct = (x: number) => `${((100 * x) / h.n).toFixed(1)}%`;
  return `hit@1 ${pct(h.hit1)} hit@3 ${pct(h.hit3)} (${h.n})`;
};
const linked = (set: Prepared[]) => set.filter((p) => p.features.some((f) => f.linkShare > 0)).length;
console.log(
  `questions with a word linked to a learned table: half A ${linked(halves[0]!)}/${halves[0]!.length}, half B ${linked(halves[1]!)}/${halves[1]!.length}, ${checks.map((c) => `${c.file} ${linked(c.set)}/${c.set.length}`).join(', ')}`,
);
const report = (label: string, w: Weights) => {
  console.log(`${label} ${JSON.stringify(w)}`);
  console.log(`  half A ${show(halves[0]!, w)} | half B ${show(halves[1]!, w)} | all ${show(fitSet, w)}`);
  for (const c of checks) console.log(`  ${c.file} ${show(c.set, w)}`);
};
report('today (fused score alone)', {});
const IDEAS: Record<string, (keyof Features)[]> = {
  unlinked: ['unlinked'],
  learned: ['linkShare', 'unlinked'],
  cover: ['wordCover', 'unlinked'],
  first: ['first'],
  'learned+first': ['linkShare', 'unlinked', 'first'],
};
// The service's rule (table-links.ts): a turn's share of unlinked tables first, then the fused score; no weight.
report('unlinked tables last (the service)', { unlinked: -100 });
for (const [idea, names] of Object.entries(IDEAS)) {
  report(`${idea}, fitted on half A`, search(halves[0]!, names));
  report(`${idea}, fitted on half B`, search(halves[1]!, names));
}
