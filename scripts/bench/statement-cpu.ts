// `npm run bench -- statement-cpu --databases a,b [--turns N] [--rounds R]`: the
// database CPU of each of /memoryChat's two statements (retrieval, append), read from the backend's own
// scheduler clock (/proc/<pid>/schedstat, ns) around each statement, as the service sends them (under
// the caller's row-security scope, prepared). Each database named is a copy of the seeded server data
// (`npm run bench -- --server`, BENCH_DATABASE_URL) on this machine; they take turns in rounds of N
// turns each, so schema variants (another index, another migration) compare side by side.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import { scopedDatabase } from '../../services/db/row-security.js';
import { floorTurns } from './floor.js';
import { runNsOf } from './rss.js';
import { openServerDatabase } from './server-databases.js';
import { conversationClient } from './workload.js';

const { values: args } = parseArgs({
  options: {
    databases: { type: 'string' },
    turns: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '4' },
    users: { type: 'string', default: '1000' },
  },
});

interface Totals {
  retrieval: number;
  append: number;
  turns: number;
}

const names = args.databases!.split(',');
const totals = new Map<string, Totals>(names.map((n) => [n, { retrieval: 0, append: 0, turns: 0 }]));
const opened = await Promise.all(
  names.map(async (name) => {
    const db = await openServerDatabase(name, 1);
    const pid = (await db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const scoped = scopedDatabase(db.pool);
    const t = totals.get(name)!;
    // The floor's two statements, each timed on the backend: retrieval first, then the append.
    const timed = (inner: Queryable): Queryable => ({
      async query(statement: never, values?: never) {
        const before = runNsOf(pid);
        const result = await inner.query(statement, values);
        const spent = runNsOf(pid) - before;
        if (/^\s*WITH sess AS/.test((statement as { text: string }).text)) t.retrieval += spent;
        else t.append += spent;
        return result;
      },
    });
    const turn = floorTurns((who) => timed(scoped.asUser(who)));
    return { name, db, next: conversationClient(names.indexOf(name) + 7, Number(args.users), turn) };
  }),
);

const turns = Number(args.turns);
for (let r = 0; r < Number(args.rounds); r++) {
  const order = r % 2 === 0 ? opened : [...opened].reverse();
  for (const o of order) {
    for (let i = 0; i < turns; i++) await o.next();
    totals.get(o.name)!.turns += turns;
  }
}
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
console.log('database | turns | retrieval ms/turn | append ms/turn | both');
for (const [name, t] of totals) {
  const ms = (ns: number) => (ns / 1e6 / t.turns).toFixed(3);
  console.log(`${name} | ${t.turns} | ${ms(t.retrieval)} | ${ms(t.append)} | ${ms(t.retrieval + t.append)}`);
}
await Promise.all(opened.map((o) => o.db.close()));
