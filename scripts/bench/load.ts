// Closed-loop load: N clients, each sends its next request as soon as the previous one returns.
// Bounded by time and by a request count; a warm-up period is run and discarded first.

export interface LoadOptions {
  clients: number;
  warmupMs: number;
  durationMs: number;
  maxRequests: number;
}

export interface LoadResult {
  clients: number;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  firstError?: string;
  /** Every measured latency (ms), for combining slices. */
  latencies?: number[];
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summarise(latencies: number[], clients: number, seconds: number, errors = 0, firstError?: string): LoadResult {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    clients,
    requests: sorted.length,
    errors,
    seconds,
    rps: sorted.length / seconds,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
    ...(firstError ? { firstError } : {}),
  };
}

/** `makeClient(i)` returns the function that performs client i's next request. */
export async function runLoad(opts: LoadOptions, makeClient: (i: number) => () => Promise<void>): Promise<LoadResult> {
  const clients = Array.from({ length: opts.clients }, (_, i) => makeClient(i));
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let measuring = false;
  let stop = false;
  let measureStart = 0;
  const loop = async (next: () => Promise<void>) => {
    while (!stop) {
      const t0 = performance.now();
      try {
        await next();
        if (measuring) latencies.push(performance.now() - t0);
      } catch (err) {
        if (measuring) errors++;
        firstError ??= (err as Error).message;
        if (errors > 50 && errors > latencies.length) stop = true;
      }
      if (measuring && latencies.length + errors >= opts.maxRequests) stop = true;
    }
  };
  const running = clients.map(loop);
  await new Promise((r) => setTimeout(r, opts.warmupMs));
  measuring = true;
  measureStart = performance.now();
  const timer = setTimeout(() => (stop = true), opts.durationMs);
  await Promise.all(running);
  clearTimeout(timer);
  // Requests still in flight when time ran out finish before this point and are counted.
  const result = summarise(latencies, opts.clients, (performance.now() - measureStart) / 1000, errors, firstError);
  return { ...result, latencies };
}

/** Slices of one system at one concurrency, combined: all latencies, total requests over total time. */
export function combine(slices: LoadResult[]): LoadResult {
  const all = slices.flatMap((s) => s.latencies ?? []);
  const seconds = slices.reduce((a, s) => a + s.seconds, 0);
  const errors = slices.reduce((a, s) => a + s.errors, 0);
  return summarise(all, slices[0]?.clients ?? 0, seconds, errors, slices.find((s) => s.firstError)?.firstError);
}
