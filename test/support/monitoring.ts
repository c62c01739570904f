// What k8s/monitoring holds (the PrometheusRule's alerts, the Grafana dashboard's queries), the metric
// names a PromQL expression selects, and the series names a /metrics scrape exposes: so that alerts and
// panels can be held to what the service exports (test/api/plugins/metrics/metrics.test.ts) and the rules
// tested with promtool (test/k8s/monitoring.test.ts). A lexer's worth of PromQL, not a parser: promtool
// checks the syntax; this only has to find every selector's name in the expressions k8s/monitoring holds.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const MONITORING = fileURLToPath(new URL('../../k8s/monitoring/', import.meta.url));

export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  annotations?: Record<string, string>;
}

/** The PrometheusRule's groups, as a Prometheus rule file holds them. */
export function ruleGroups(): { name: string; rules: Rule[] }[] {
  return parse(readFileSync(`${MONITORING}prometheus-rule.yaml`, 'utf8')).spec.groups;
}

export function alertRules(): (Rule & { alert: string })[] {
  return ruleGroups()
    .flatMap((g) => g.rules)
    .filter((r): r is Rule & { alert: string } => r.alert !== undefined);
}

/** Every panel's query, and the metric the namespace picker's `label_values(<metric>, <label>)` reads. */
export function dashboardQueries(): { panels: { panel: string; expr: string }[]; variableMetrics: string[] } {
  const dashboard = JSON.parse(readFileSync(`${MONITORING}grafana-dashboard.json`, 'utf8'));
  return {
    panels: dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => ({ panel: `${p.title} (${t.refId})`, expr: t.expr }))),
    variableMetrics: dashboard.templating.list
      .map((v: any) => /^label_values\(\s*([\w:]+)/.exec(v.query?.query ?? '')?.[1])
      .filter(Boolean),
  };
}

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/** Every metric name a selector of `expr` names; Grafana variables ($namespace, $__rate_interval) may appear where a value or a range does. */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ') // strings
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ') // Grafana variables elsewhere
    .replace(/(?<![\w:])(\d+(\.\d+)?(e[+-]?\d+)?|0x[0-9a-f]+)(ms|[smhdwy])?(?![\w:])/gi, ' '); // numbers and durations
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[a-zA-Z_:][\w:]*/g)) {
    const after = stripped.slice(match.index + match[0].length).trimStart();
    if (after.startsWith('(') || KEYWORDS.has(match[0].toLowerCase())) continue;
    names.add(match[0]);
  }
  return [...names];
}

/**
 * The series names a Prometheus text exposition offers, from its `# TYPE` lines, so that a metric
 * counts as exported before its first sample: a histogram's `_bucket`, `_sum` and `_count`, a summary's
 * name with `_sum` and `_count`, any other metric's own name.
 */
export function exportedSeriesNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(`${name}${suffix}`);
    else names.add(name!);
  }
  return names;
}
