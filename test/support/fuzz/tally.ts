import type { RawResponse } from './raw-http.js';
import type { FuzzRequest } from './requests.js';

/** Why a response breaks the contract (no 5xx; every 4xx an RFC 9457 problem), or undefined. */
export function contractBreach(request: FuzzRequest, response: RawResponse | undefined): string | undefined {
  if (!response) return 'the connection closed without a response';
  if (response.status >= 500) return `${response.status}`;
  if (response.status < 400) return undefined;
  const contentType = response.headers['content-type'] ?? '';
  if (!contentType.startsWith('application/problem+json')) return `${response.status} as ${contentType || 'no content type'}`;
  if (response.status === 401 && !/^Bearer/.test(response.headers['www-authenticate'] ?? '')) return '401 without WWW-Authenticate: Bearer';
  if (request.method === 'HEAD') return undefined;
  let problem: Record<string, unknown>;
  try {
    problem = JSON.parse(response.body.toString('utf8'));
  } catch {
    return `${response.status} problem that is not JSON`;
  }
  const missing = ['type', 'title', 'detail', 'code'].filter((m) => typeof problem[m] !== 'string');
  if (missing.length || problem.status !== response.status || problem.type !== `/problems/${problem.code}`) {
    return `${response.status} problem without RFC 9457 members: ${JSON.stringify(problem).slice(0, 200)}`;
  }
  return undefined;
}

/** A request as a reader can replay it: operation, damage done, method, target, headers, body start. */
export function describeRequest(r: FuzzRequest): string {
  const body = r.body ? ` body(${r.body.length} B)=${JSON.stringify(r.body.subarray(0, 300).toString('latin1'))}` : '';
  const headers = r.headers.map(([n, v]) => `${n}: ${JSON.stringify(v.slice(0, 80))}`).join(', ');
  return `[${r.operation} / ${r.variant}] ${r.method} ${JSON.stringify(r.target.slice(0, 200))} {${headers}}${body}`;
}

/** Counts per status class, per operation and per problem code, and every breach with its request. */
export class FuzzTally {
  readonly byClass = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
  readonly perOperation = new Map<string, { sent: number; passed: number }>();
  readonly problemCodes = new Map<string, number>();
  readonly breaches: { reason: string; request: string }[] = [];
  nonProblem4xx = 0;

  record(request: FuzzRequest, response: RawResponse | undefined): void {
    const status = response?.status ?? 0;
    const breach = contractBreach(request, response);
    if (status) this.byClass[`${Math.floor(status / 100)}xx` as keyof typeof this.byClass] += 1;
    if (breach) {
      this.breaches.push({ reason: breach, request: describeRequest(request) });
      if (status >= 400 && status < 500) this.nonProblem4xx += 1;
    }
    if (status >= 400) {
      const code = `${status} ${/"code":"([^"]+)"/.exec(response!.body.toString('utf8'))?.[1] ?? '(no body)'}`;
      this.problemCodes.set(code, (this.problemCodes.get(code) ?? 0) + 1);
    }
    const counts = this.perOperation.get(request.operation) ?? { sent: 0, passed: 0 };
    counts.sent += 1;
    if (status >= 200 && status < 300) counts.passed += 1;
    this.perOperation.set(request.operation, counts);
  }

  /** "3× 500; 1× 404 as text/html": what went wrong, for the failure message. */
  breachSummary(): string {
    const kinds = new Map<string, number>();
    for (const { reason } of this.breaches) kinds.set(reason.slice(0, 60), (kinds.get(reason.slice(0, 60)) ?? 0) + 1);
    return [...kinds].map(([reason, n]) => `${n}× ${reason}`).join('; ');
  }

  /** Requests and successes per operation, then responses per problem code: where the fuzz reached. */
  coverage(): string {
    const operations = [...this.perOperation].map(([op, c]) => `${op}: ${c.passed}/${c.sent} 2xx`);
    const codes = [...this.problemCodes].sort().map(([code, n]) => `${code}: ${n}`);
    return [...operations, ...codes].join('\n');
  }
}
