// The benchmark suites of `npm run bench -- <suite>` (bench.ts), each a script of its own run with the
// options that follow its name. A new suite is a script and a line here, and a section of the doc it
// measures for (the command, and what its figures mean); docs naming a suite that is not here fail
// test/architecture/doc-links.test.ts.
export const SUITES: Record<string, Suite> = {
  'memory-chat': {
    script: './run.ts',
    about:
      '/memoryChat against the floor and the LangChain peers, per-user search against stored volume, RSS [--server] [--scale] [--clients 1,10,50] [--rounds R] [--seconds S] [--json FILE]',
  },
  citus: {
    script: './run.ts',
    options: ['--citus'],
    about: '/memoryChat on a Citus cluster next to the single server, and search on the cluster [--turns N] [--clients 1,10]',
  },
  'heavy-user': {
    script: './heavy-user.ts',
    about: 'a user with a long history against a user with one turn [--server] [--sizes 2000x400,...] [--keep --prefix P]',
  },
  'answer-length': {
    script: './answer-length.ts',
    about: "the retrieval statement reading long answers whole against the block's first 501 characters [--server] [--chars 500,2000,8000]",
  },
  'ann-recall': { script: './ann-recall.ts', about: 'recall@20 of the approximate path against exact search [--embedded]' },
  'statement-cpu': {
    script: './statement-cpu.ts',
    about: "database CPU of /memoryChat's two statements, per copy of the seeded server data --databases a,b",
  },
  'retrieval-parts': {
    script: './retrieval-parts.ts',
    about:
      "what each part of /memoryChat's retrieval statement costs the database and the app, call by call (--database NAME | --data DIR) [--variants a,b] [--against CHECKOUT]",
  },
  'explain-turn': { script: './explain-turn.ts', about: "EXPLAIN (ANALYZE, BUFFERS) of /memoryChat's two statements --database NAME" },
  profile: {
    script: './profile.ts',
    about: "the service's (or the fair peer's) CPU per turn by area [--server] [--perf [--peer]] [--env NAME=VALUE,...]",
  },
  'first-start': { script: './first-start.ts', about: '`npm start` on a fresh clone, then idle RSS [--runs 3] [--idle-seconds 30]' },
  cleanup: {
    script: './cleanup-throughput.ts',
    about: 'retention cleanup throughput on the embedded database [turns] [turns per session] [batch]',
  },
  'sql-fairness': {
    script: './sql-fairness.ts',
    about:
      "the SQL answerer's connections under two tenants' slow load: a third tenant's answers, fair shares against arrival order [--server] [--pool 2] [--wait-ms 3000] [--hold-ms 1500] [--seconds 30]",
  },
  'citus-move': {
    script: '../citus/distribute-populated.ts',
    about: 'moving a populated single-server database to Citus, with a writer going on [--users N] [--mode both]',
  },
  'citus-lost-write': {
    script: '../citus/lost-write-repro.ts',
    about: "a shard move's lost writes with synchronous_commit off, against on [--runs 3] [--moves 4]",
  },
};

export interface Suite {
  /** Relative to scripts/bench/. */
  script: string;
  /** Options the suite always runs with. */
  options?: string[];
  /** One line for `npm run bench -- --help`. */
  about: string;
}
