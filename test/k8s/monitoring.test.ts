// What operators watch (docs/monitoring.md): the PrometheusRule's alerts under `promtool test rules`
// (Debian's prometheus package, which .ci/run installs), and the alerts and the Grafana dashboard held
// to the metrics the running service exports.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { exportedSeriesNames, metricNamesIn } from '../support/promql-metric-names.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROMTOOL = '/usr/bin/promtool';

interface AlertRule {
  alert?: string;
  record?: string;
  expr: string;
  annotations?: Record<string, string>;
}
interface AlertTest {
  alertname: string;
  exp_alerts: { exp_labels: Record<string, string>; exp_annotations?: Record<string, string> }[];
}

const ruleGroups: { name: string; rules: AlertRule[] }[] = parse(
  readFileSync(path.join(ROOT, 'k8s/monitoring/prometheus-rule.yaml'), 'utf8'),
).spec.groups;
const alerts = ruleGroups.flatMap((g) => g.rules).filter((r): r is AlertRule & { alert: string } => r.alert !== undefined);
const unitTests = parse(readFileSync(path.join(ROOT, 'test/k8s/alert-rules.promtool.yaml'), 'utf8'));
const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'k8s/monitoring/grafana-dashboard.json'), 'utf8'));
const panelQueries: { panel: string; expr: string }[] = dashboard.panels.flatMap((p: any) =>
  (p.targets ?? []).map((t: any) => ({ panel: `${p.title} (${t.refId})`, expr: t.expr })),
);
// The namespace picker's query: label_values(<metric>, <label>).
const variableMetrics: string[] = dashboard.templating.list
  .map((v: any) => /^label_values\(\s*([\w:]+)/.exec(v.query?.query ?? '')?.[1])
  .filter(Boolean);

describe('what operators watch (k8s/monitoring)', () => {
  let dir: string;
  beforeAll(async () => {
    if (!existsSync(PROMTOOL)) throw new Error(`${PROMTOOL} is missing: apt-get install -y prometheus (.ci/run does)`);
    dir = await mkdtemp(path.join(tmpdir(), 'memorychat-promtool-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  /** promtool test rules on `groups` with the unit tests, each expected alert given its rule's annotations. */
  async function promtoolTest(groups: typeof ruleGroups) {
    await writeFile(path.join(dir, 'alert-rules.yaml'), stringify({ groups }));
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
    const result = await promtoolTest(ruleGroups);
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('SUCCESS');
  });

  it('when no alert can fire any more, then promtool fails the test of every one', async () => {
    const silenced = ruleGroups.map((g) => ({ ...g, rules: g.rules.map((r) => ({ ...r, expr: `(${r.expr}) unless on () vector(1)` })) }));
    const result = await promtoolTest(silenced);
    expect(result.status).not.toBe(0);
    for (const { alert } of alerts) expect(result.stdout + result.stderr).toContain(`alertname: ${alert},`);
  });

  it('when promtool checks the dashboard queries as rules, then every one is valid PromQL', async () => {
    const rules = panelQueries.map((q, i) => ({
      record: `dashboard:panel_query:${i}`,
      expr: q.expr.replaceAll('$__rate_interval', '5m').replaceAll('$namespace', 'mc'),
    }));
    expect(rules.length).toBeGreaterThan(20);
    await writeFile(path.join(dir, 'dashboard-queries.yaml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
    const result = spawnSync(PROMTOOL, ['check', 'rules', 'dashboard-queries.yaml'], { cwd: dir, encoding: 'utf8' });
    expect(result.status, result.stdout + result.stderr).toBe(0);
  });

  describe('against the running service', () => {
    let t: TestApp;
    let exported: Set<string>;
    beforeAll(async () => {
      t = await startTestApp();
      exported = exportedSeriesNames(await (await fetch(`${t.baseUrl}/metrics`)).text());
    });
    afterAll(() => t?.close());

    it('when an alert or a panel names a metric, then the service exports it', () => {
      const named = [
        ...alerts.map((a) => ({ where: `alert ${a.alert}`, names: metricNamesIn(a.expr) })),
        ...panelQueries.map((q) => ({ where: `panel ${q.panel}`, names: metricNamesIn(q.expr) })),
        { where: 'the namespace variable', names: variableMetrics },
      ];
      for (const { where, names } of named) {
        expect([where, names.length > 0]).toEqual([where, true]);
        expect([where, names.filter((n) => !exported.has(n))]).toEqual([where, []]);
      }
      // The check sees what it should: names are found where they are, and an unknown one is not exported.
      expect(metricNamesIn('sum by (le) (rate(a_bucket{x="y"}[5m])) / on (z) b offset 1h > 0.1')).toEqual(['a_bucket', 'b']);
      expect(exported.has('memorychat_memory_retrieval_seconds')).toBe(false);
    });
  });
});
