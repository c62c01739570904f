// profile.ts --perf: the service's CPU by area from Linux `perf` samples instead of V8's profiler.
// V8's sampler stamps a sample when the thread next runs, so time the service spent preempted right
// after a write woke PostgreSQL's backend was charged to `writev` (a third of the samples at 10
// clients, where /proc put the process's whole system time at a tenth of its CPU). perf's cpu-clock
// samples count only time on a CPU, kernel work included; node's --perf-basic-prof names the JS frames.
import { spawn } from 'node:child_process';
import { areaOfUrl } from './profile-areas.js';

/** perf's sampling rate: each sample stands for 1/HZ s of CPU. */
const HZ = 999;

/** Records every thread of `pid` for `seconds` into `file`. */
export async function recordPerf(pid: number, seconds: number, file: string): Promise<void> {
  const perf = spawn('perf', ['record', '-q', '-F', String(HZ), '-g', '-o', file, '-p', String(pid), '--', 'sleep', String(seconds)], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    perf.on('error', reject);
    perf.on('exit', resolve);
  });
  if (code !== 0) throw new Error(`perf record exited with ${code} (is perf installed, and perf_event_paranoid low enough?)`);
}

/** `JS:*name file:///…/x.js:12:3+0x1f (/tmp/perf-N.map)`: the frame's function name (without V8's tier mark, `*`, `~` or `^`), url and line. */
const JS_FRAME = /\sJS:[*~^]?(\S*)\s+(\S+?):(\d+):\d+\+0x/;
/** V8's collectors, when they run inside an allocation: charged to GC, as V8's profiler does. */
const GC_FRAME = /v8::internal::(Heap|Scavenger|MarkCompact|MinorMarkCompact|GCTracer)\b/;

/**
 * CPU milliseconds from `perf script` output, in one pass over its samples. By area: the main thread's
 * samples by the area of their nearest JS frame that has one (native, kernel and node: frames are
 * charged to it), a collector's frame below it charging the sample to GC; the other threads (V8's
 * compiler and collector helpers, libuv's pool) are one row. By function: the main thread's samples by
 * their nearest JS frame, where in an area the time goes.
 */
export function perfCpu(script: string, pid: number, root: string): { byArea: Map<string, number>; byFunction: Map<string, number> } {
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1000 / HZ);
  for (const sample of script.split('\n\n')) {
    const [head, ...frames] = sample.trim().split('\n');
    const tid = Number(head?.trim().split(/\s+/)[1]);
    if (!head || !Number.isFinite(tid)) continue;
    if (tid !== pid) {
      add(byArea, '(other threads: V8 compiler and GC helpers, libuv)');
      continue;
    }
    let area: string | undefined;
    let fn: string | undefined;
    for (const frame of frames) {
      if (!area && GC_FRAME.test(frame)) area = 'GC';
      const js = JS_FRAME.exec(frame);
      if (!js) continue;
      fn ??= `${js[1] || '(anonymous)'} ${js[2]!.split('/').slice(-2).join('/')}:${js[3]}`;
      area ??= areaOfUrl(js[2]!, root);
      if (area && fn) break;
    }
    add(byArea, area ?? '(node internals only)');
    add(byFunction, fn ?? '(no JS frame)');
  }
  return { byArea, byFunction };
}
