// `node --import tsx scripts/eval/rerank/fit.ts --fit SPARC.json [--check OTHER.json ...] [--pool N]`:
// fits the weights of the similar turns' rerank (similar-rerank.ts) on candidates that
// `npm run eval -- --candidates FILE` wrote, and reports hit@1, hit@3 and the top turn's table
// coverage as the eval counts them, today's order against the fitted one. The --fit file's databases
// are split in two halves (alternate database ids in sorted order): weights are fitted on each half
// and checked on the other half, on every --check file, and fitted on all of --fit last.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { tableCoverage } from '../dialogues.js';
import type { CandidateRecord } from './candidates.js';
import { type RerankFeatures, type RerankWeights, rerankFeatures, rerankSimilar, TODAY } from './similar-rerank.js';

const { values: args } = parseArgs({
  options: { fit: { type: 'string' }, check: { type: 'string', multiple: true }, pool: { type: 'string' } },
});
if (!args.fit) throw new Error('--fit FILE is required');
const pool = Number(args.pool ?? 20);
const load = (file: string): CandidateRecord[] =>
  (JSON.parse(readFileSync(file, 'utf8')) as CandidateRecord[]).map((r) => ({
    ...r,
    candidates: r.candidates.slice(0, pool).map((c) => ({ ...c, created_at: new Date(c.created_at) })),
  }));
const K = 3;
const NAMES = Object.keys(TODAY) as (keyof RerankFeatures)[];

/** Pairwise logistic regression with an L2 penalty: each candidate over the gold tables against each one not. */
function logisticFit(records: CandidateRecord[], l2 = 0.01, steps = 3000, rate = 0.5): RerankWeights {
  const pairs: number[][] = [];
  for (const r of records) {
    const f = rerankFeatures(r.question, r.candidates).map((x) => NAMES.map((n) => x[n]));
    r.candidates.forEach((good, i) => {
      if (good.tables !== r.wanted) return;
      r.candidates.forEach((bad, j) => {
        if (bad.tables !== r.wanted) pairs.push(f[i]!.map((v, d) => v - f[j]![d]!));
      });
    });
  }
  const w = NAMES.map(() => 0);
  for (let step = 0; step < steps; step++) {
    const grad = w.map((x) => l2 * x);
    for (const p of pairs) {
      const margin = p.reduce((s, v, d) => s + v * w[d]!, 0);
      const g = -1 / (1 + Math.exp(margin));
      for (let d = 0; d < p.length; d++) grad[d]! += (g * p[d]!) / pairs.length;
    }
    for (let d = 0; d < w.length; d++) w[d]! -= rate * grad[d]!;
  }
  // Scaled so the fused score weighs 1: the numbers then read against today's order.
  return Object.fromEntries(NAMES.map((n, d) => [n, round(w[d]! / w[0]!)])) as RerankWeights;
}

/**
 * Coordinate ascent on hit@1 itself (hit@3, then smaller weights, breaking ties): each weight
 * but the fused score's, in turn, set to the best of a grid from -0.5 to 0.5 in steps of 0.02, until none changes.
 */
function hit1Search(records: CandidateRecord[]): RerankWeights {
  const w = { ...TODAY };
  const grid = Array.from({ length: 51 }, (_, i) => round(-0.5 + i * 0.02));
  const value = (x: RerankWeights) => {
    const m = hits(records, x);
    return m.hit1 * 1000 + m.hit3 - Object.values(x).reduce((a, b) => a + Math.abs(b), 0) / 100;
  };
  for (let round = 0, changed = true; changed && round < 5; round++) {
    changed = false;
    for (const n of NAMES.slice(1)) {
      let best = w[n];
      let bestValue = value(w);
      for (const g of grid) {
        const v = value({ ...w, [n]: g });
        if (v > bestValue) [best, bestValue] = [g, v];
      }
      if (best !== w[n]) [w[n], changed] = [best, true];
    }
  }
  return w;
}

function hits(records: CandidateRecord[], weights: RerankWeights) {
  let hit1 = 0;
  let hit3 = 0;
  for (const r of records) {
    const sent = rerankSimilar(r.question, r.candidates, K, weights).map((c) => c.tables);
    if (sent[0] === r.wanted) hit1++;
    if (sent.includes(r.wanted)) hit3++;
  }
  return { hit1, hit3 };
}

function measure(records: CandidateRecord[], weights: RerankWeights) {
  let hit1 = 0;
  let hit3 = 0;
  let coverage = 0;
  for (const r of records) {
    const sent = rerankSimilar(r.question, r.candidates, K, weights).map((c) => c.tables);
    if (sent[0] === r.wanted) hit1++;
    if (sent.includes(r.wanted)) hit3++;
    coverage += tableCoverage(sent[0], r.wanted);
  }
  const pct = (n: number) => `${((100 * n) / records.length).toFixed(1)}%`;
  return `${records.length} questions: hit@1 ${pct(hit1)}, hit@3 ${pct(hit3)}, coverage ${pct(coverage)}`;
}

const round = (x: number) => Math.round(x * 100) / 100;
const fitRecords = load(args.fit);
const checks = (args.check ?? []).map((file) => ({ file, records: load(file) }));
const databases = [...new Set(fitRecords.map((r) => r.database_id))].sort();
const half = (h: number) => new Set(databases.filter((_, i) => i % 2 === h));
const halves = [0, 1].map((h) => fitRecords.filter((r) => half(h).has(r.database_id)));

const report = (label: string, weights: RerankWeights) => {
  console.log(`${label}: ${JSON.stringify(weights)}`);
  console.log(`  half A  ${measure(halves[0]!, weights)}`);
  console.log(`  half B  ${measure(halves[1]!, weights)}`);
  console.log(`  all     ${measure(fitRecords, weights)}`);
  for (const c of checks) console.log(`  ${c.file}  ${measure(c.records, weights)}`);
};
report('today (fused score alone)', TODAY);
report('logistic, fitted on half A', logisticFit(halves[0]!));
report('logistic, fitted on half B', logisticFit(halves[1]!));
report('logistic, fitted on all', logisticFit(fitRecords));
report('hit@1 search, fitted on half A', hit1Search(halves[0]!));
report('hit@1 search, fitted on half B', hit1Search(halves[1]!));
report('hit@1 search, fitted on all', hit1Search(fitRecords));
