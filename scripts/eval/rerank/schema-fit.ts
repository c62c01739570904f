// `node --import tsx scripts/eval/rerank/schema-fit.ts --fit SPARC.json [--check OTHER.json ...]`:
// the rerank ideas that fit.ts's features of each candidate's own SQL leave out, measured on the
// candidates `npm run eval -- --candidates FILE` wrote. Each idea is a few features besides the fused
// score; its weights are searched on a grid for hit@1 (then hit@3) on one half of the --fit file's
// databases (alternate ids in sorted order) and checked on the other half and on every --check file.
//   learned:  the question's words linked to tables through the user's own stored SQL (learned-schema.ts):
//             the share of the links that fall on the candidate's tables, and the share of its tables
//             no word links to; both 0 when no word links to any table (a question in Chinese).
//   first:    the candidate is its session's first question (standalone) rather than a follow-up.
//   both:     the two together.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { CandidateRecord } from './candidates.js';
import { learnSchema, tableLinks } from './learned-schema.js';
import { rerankByScore } from './similar-rerank.js';

const { values: args } = parseArgs({
  options: { fit: { type: 'string' }, check: { type: 'string', multiple: true }, from: { type: 'string' } },
});
/** Learn the schema from the user's whole history (`history`) or from the candidates' own SQL only (`candidates`). */
const from = args.from ?? 'history';
if (!args.fit) throw new Error('--fit FILE is required');
const K = 3;
const MAX_FUSED = 2 / 61;

type Features = { fused: number; linkShare: number; unlinked: number; wordCover: number; first: number };
interface Prepared {
  record: CandidateRecord;
  features: Features[];
}

function prepare(record: CandidateRecord): Prepared {
  const schema = learnSchema(from === 'history' ? record.history : record.candidates.map((c) => c.sql_query));
  const { links, words } = tableLinks(record.question, schema);
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
console.log(`questions with a word linked to a learned table: half A ${linked(halves[0]!)}/${halves[0]!.length}, half B ${linked(halves[1]!)}/${halves[1]!.length}, ${checks.map((c) => `${c.file} ${linked(c.set)}/${c.set.length}`).join(', ')}`);
const report = (label: string, w: Weights) => {
  console.log(`${label} ${JSON.stringify(w)}`);
  console.log(`  half A ${show(halves[0]!, w)} | half B ${show(halves[1]!, w)} | all ${show(fitSet, w)}`);
  for (const c of checks) console.log(`  ${c.file} ${show(c.set, w)}`);
};
report('today (fused score alone)', {});
const IDEAS: Record<string, (keyof Features)[]> = {
  learned: ['linkShare', 'unlinked'],
  first: ['first'],
  unlinked: ['unlinked'],
  cover: ['wordCover', 'unlinked'],
  both: ['linkShare', 'unlinked', 'first'],
};
// How hit@1 and hit@3 follow the one weight that won on both halves.
for (const w of [-0.5, -1, -3, -100]) report(`unlinked at ${w}`, { unlinked: w });
for (const x of [0.1, 0.2, 0.3, 0.5, 1]) {
  report(`unlinked -3, wordCover ${x}`, { unlinked: -3, wordCover: x });
  report(`unlinked -3, linkShare ${x}`, { unlinked: -3, linkShare: x });
  report(`unlinked -3, first ${x}`, { unlinked: -3, first: x });
}
for (const [idea, names] of Object.entries(IDEAS)) {
  report(`${idea}, fitted on half A`, search(halves[0]!, names));
  report(`${idea}, fitted on half B`, search(halves[1]!, names));
}
