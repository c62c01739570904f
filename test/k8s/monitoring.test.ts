// What operators watch (docs/monitoring.md): the PrometheusRule's alerts under `promtool test rules`
// (Debian's prometheus package, which .ci/run installs), and the Grafana dashboard's queries checked
// by promtool. That both name only metrics the service exports: test/api/plugins/metrics/metrics.test.ts.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { alertRules, dashboardQueries, ruleGroups } from '../support/monitoring.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROMTOOL = '/usr/bin/promtool';

interface AlertTest {
  alertname: string;
  exp_alerts: { exp_labels: Record<string, string>; exp_annotations?: Record<string, string> }[];
}

const groups = ruleGroups();
const alerts = alertRules();
const unitTests = parse(readFileSync(path.join(ROOT, 'test/k8s/alert-rules.promtool.yaml'), 'utf8'));

describe('what operators watch (k8s/monitoring)', () => {
  let dir: string;
  beforeAll(async () => {
    if (!existsSync(PROMTOOL)) throw new Error(`${PROMTOOL} is missing: apt-get install -y prometheus (.ci/run does)`);
    dir = await mkdtemp(path.join(tmpdir(), 'memorychat-promtool-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  /** promtool test rules on `groups` with the unit tests, each expected alert given its rule's annotations. */
  async function promtoolTest(tested: ReturnType<typeof ruleGroups>) {
    await writeFile(path.join(dir, 'alert-rules.yaml'), stringify({ groups: tested }));
    const annotated = structuredClone(unitTests);
    for (const test of annotated.tests) {
      for (const check of test.alert_rule_test as AlertTest[]) {
        const rule = alerts.find((a) => a.alert === check.alertname);
        for (const expected of check.exp_alerts) {
          expected.exp_annotations = Object.fromEntries(
            Object.entries(rule?.annotations ?? {}).map(([k, v]) => [
              k,
              v.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, label: string) => expected.exp_labels[label] ?? ''),
            ]),
          );
        }
      }
    }
    await writeFile(path.join(dir, 'tests.yaml'), stringify(annotated));
    return spawnSync(PROMTOOL, ['test', 'rules', 'tests.yaml'], { cwd: dir, encoding: 'utf8' });
  }

  it('when promtool tests the alert rules, then each alert fires on its failure and stays quiet on a healthy series', async () => {
    const checks: AlertTest[] = unitTests.tests.flatMap((t: { alert_rule_test: AlertTest[] }) => t.alert_rule_test);
    for (const { alert } of alerts) {
      expect([alert, checks.some((c) => c.alertname === alert && c.exp_alerts.length > 0)]).toEqual([alert, true]);
      expect([alert, checks.some((c) => c.alertname === alert && c.exp_alerts.length === 0)]).toEqual([alert, true]);
    }
    const result = await promtoolTest(groups);
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('SUCCESS');
  });

  it('when no alert can fire any more, then promtool fails the test of every one', async () => {
    const silenced = groups.map((g) => ({ ...g, rules: g.rules.map((r) => ({ ...r, expr: `(${r.expr}) unless on () vector(1)` })) }));
    const result = await promtoolTest(silenced);
    expect(result.status).not.toBe(0);
    for (const { alert } of alerts) expect(result.stdout + result.stderr).toContain(`alertname: ${alert},`);
  });

  it('when promtool checks the dashboard queries as rules, then every one is valid PromQL', async () => {
    const rules = dashboardQueries().panels.map((q, i) => ({
      record: `dashboard:panel_query:${i}`,
      expr: q.expr.replaceAll('$__rate_interval', '5m').replaceAll('$namespace', 'mc'),
    }));
    expect(rules.length).toBeGreaterThan(20);
    await writeFile(path.join(dir, 'dashboard-queries.yaml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
    const result = spawnSync(PROMTOOL, ['check', 'rules', 'dashboard-queries.yaml'], { cwd: dir, encoding: 'utf8' });
    expect(result.status, result.stdout + result.stderr).toBe(0);
  });
});
