import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

type Totals = { passed: number; failed: number; skipped: number };

const KEYS = ['passed', 'failed', 'skipped'] as const;

const line = (t: Totals) => `${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`;

/**
 * .ci/run's closing line: the totals of the run, then of each project (embedded, server), e.g.
 * `410 passed, 0 failed, 2 skipped (embedded: 260 passed, ...; server: 150 passed, ...)`.
 * A file that failed outside its tests (an import or a hook) counts as one failure. Suites run
 * before it (the Python client's; vitest runs on the image's Node, scripts/test-on-image-node.ts)
 * leave their counts in EXTRA_TOTALS_FILE, as `{name: {passed, failed, skipped}}`, and count here too.
 * With TOTALS_AS=<name>, a run adds its own totals to that file under the name instead.
 * Errors thrown outside any test (an unhandled rejection, an uncaught exception) fail the run with
 * every test passed; each is named here, last, where the end of a long log still shows it.
 */
export default class TotalsReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError> = []) {
    const all: Totals = { passed: 0, failed: 0, skipped: 0 };
    const byProject = new Map<string, Totals>();
    for (const module of testModules) {
      const project = byProject.get(module.project.name) ?? { passed: 0, failed: 0, skipped: 0 };
      byProject.set(module.project.name, project);
      const counts: Totals = { passed: 0, failed: 0, skipped: 0 };
      for (const test of module.children.allTests()) {
        const { state } = test.result();
        if (state === 'passed') counts.passed += 1;
        else if (state === 'failed') counts.failed += 1;
        else counts.skipped += 1;
      }
      if (counts.failed === 0 && module.state() === 'failed') counts.failed = 1;
      for (const key of KEYS) {
        project[key] += counts[key];
        all[key] += counts[key];
      }
    }
    const extra = process.env.EXTRA_TOTALS_FILE;
    const as = process.env.TOTALS_AS;
    if (as && extra) {
      const totals: Record<string, Totals> = existsSync(extra) ? JSON.parse(readFileSync(extra, 'utf8')) : {};
      const named = totals[as] ?? { passed: 0, failed: 0, skipped: 0 };
      for (const key of KEYS) named[key] += all[key];
      totals[as] = named;
      writeFileSync(extra, JSON.stringify(totals));
      console.log(`${as}: ${line(named)}`);
      return;
    }
    if (extra && existsSync(extra)) {
      for (const [name, counts] of Object.entries(JSON.parse(readFileSync(extra, 'utf8')) as Record<string, Totals>)) {
        byProject.set(name, counts);
        for (const key of KEYS) all[key] += counts[key];
      }
    }
    const projects = [...byProject].sort(([a], [b]) => a.localeCompare(b)).map(([name, t]) => `${name}: ${line(t)}`);
    console.log(`${line(all)} (${projects.join('; ')})`);
    for (const error of unhandledErrors) console.log(describeUnhandled(error));
  }
}

/** One line: where it was raised (the file running then, if any), its message, and its first frames. */
function describeUnhandled(error: SerializedError): string {
  const file = typeof error.VITEST_TEST_PATH === 'string' ? path.relative(process.cwd(), error.VITEST_TEST_PATH) : 'no test file';
  const frames = (error.stack ?? '')
    .split('\n')
    .filter((l) => l.trimStart().startsWith('at '))
    .slice(0, 3)
    .map((l) => l.trim());
  return `unhandled error (${file}): ${error.name ?? 'Error'}: ${error.message ?? String(error)} ${frames.join(' ')}`;
}
