// `node --import tsx scripts/bench/statement-cpu-ab.ts --before DIR --before-db A --after-db B [--turns N]`:
// the database CPU of /memoryChat's two statements (the floor's retrieval and append, under the
// user's row-security scope, prepared) as another revision's code (DIR, e.g. a `git archive` of
// main) sends them to database A and as this revision's sends them to database B (copies of the
// seeded server data, each migrated by its own code), alternating turn by turn in one process, so
// the machine's load falls on both alike. CPU is each backend's own (/proc/<pid>/schedstat, ns).
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Queryable } from '../../services/db/repositories/queryable.js';
import { openServerDatabase } from './server-databases.js';
import type { TurnFn } from './workload.js';
import { conversationClient } from './workload.js';

const { values: args } = parseArgs({
  options: {
    before: { type: 'string' },
    'before-db': { type: 'string' },
    'after-db': { type: 'string' },
    turns: { type: 'string', default: '1000' },
    users: { type: 'string', default: '1000' },
  },
});

const runNs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);

interface Side {
  name: string;
  retrieval: number;
  append: number;
  next: () => Promise<void>;
  close: () => Promise<void>;
}

async function side(name: string, root: string, database: string): Promise<Side> {
  const floor = (await import(path.join(root, 'scripts/bench/floor.ts'))) as { floorTurns: (db: unknown) => TurnFn };
  const security = (await import(path.join(root, 'services/db/row-security.ts'))) as {
    scopedDatabase: (pool: unknown) => { asUser: (who: unknown) => Queryable };
  };
  const db = await openServerDatabase(database, 1);
  const pid = (await db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const scoped = security.scopedDatabase(db.pool);
  const s: Side = { name, retrieval: 0, append: 0, next: async () => {}, close: () => db.close() };
  const timed = (inner: Queryable): Queryable => ({
    async query(statement: never, values?: never) {
      const before = runNs(pid);
      const result = await inner.query(statement, values);
      const spent = runNs(pid) - before;
      if (/^\s*WITH sess AS/.test((statement as { text: string }).text)) s.retrieval += spent;
      else s.append += spent;
      return result;
    },
  });
  // The same conversations on both sides.
  s.next = conversationClient(
    11,
    Number(args.users),
    floor.floorTurns((who: unknown) => timed(scoped.asUser(who))),
  );
  return s;
}

const here = path.resolve(import.meta.dirname, '../..');
const sides = [await side('before', path.resolve(args.before!), args['before-db']!), await side('after', here, args['after-db']!)];
const turns = Number(args.turns);
for (let i = 0; i < turns; i++) {
  const order = i % 2 === 0 ? sides : [...sides].reverse();
  for (const s of order) await s.next();
}
console.log(
  `${turns} turns each, alternating; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
console.log('| code | retrieval ms/turn | append ms/turn | both |');
console.log('| --- | ---: | ---: | ---: |');
for (const s of sides) {
  const ms = (ns: number) => (ns / 1e6 / turns).toFixed(3);
  console.log(`| ${s.name} | ${ms(s.retrieval)} | ${ms(s.append)} | ${ms(s.retrieval + s.append)} |`);
}
await Promise.all(sides.map((s) => s.close()));
