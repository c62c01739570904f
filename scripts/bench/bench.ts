// `npm run bench -- <suite> [options]`: the one entry to the benchmarks that docs/performance.md (and
// docs/scaling.md, docs/worker.md) cite, listed in suites.ts. A first argument that is an option runs
// `memory-chat` (`npm run bench -- --server`); `npm run bench -- --help` lists the suites.
import { fileURLToPath } from 'node:url';
import { SUITES } from './suites.js';

const [first, ...rest] = process.argv.slice(2);
if (first === '--help' || first === 'help') {
  console.log('npm run bench -- <suite> [options]\n');
  for (const [name, suite] of Object.entries(SUITES)) console.log(`  ${name.padEnd(17)} ${suite.about}`);
  process.exit(0);
}
const named = first !== undefined && !first.startsWith('-');
const name = named ? first : 'memory-chat';
const suite = SUITES[name];
if (!suite) {
  console.error(`no bench suite "${name}"; the suites: ${Object.keys(SUITES).join(', ')} (npm run bench -- --help)`);
  process.exit(2);
}
// The suite's script reads its options from process.argv, as when it was run by itself.
const options = named ? rest : process.argv.slice(2);
process.argv = [process.argv[0]!, fileURLToPath(new URL(suite.script, import.meta.url)), ...(suite.options ?? []), ...options];
await import(suite.script);
