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

/** `JS:*name file:///…/x.js:12:3+0x1f (/tmp/perf-N.map)`: the frame's url, without line and column. */
const JS_FRAME = /\sJS:\S*\s+(\S+?):\d+:\d+\+0x/;
/** V8's collectors, when they run inside an allocation: charged to GC, as V8's profiler does. */
const GC_FRAME = /v8::internal::(Heap|Scavenger|MarkCompact|MinorMarkCompact|GCTracer)\b/;

/**
 * CPU milliseconds by area from `perf script` output: the main thread's samples by the area of their
 * nearest JS frame that has one (native, kernel and node: frames are charged to it); a collector's
 * frame below it charges the sample to GC. The other threads (V8's compiler and collector helpers,
 * libuv's pool) are one row.
 */
export function perfCpuByArea(script: string, pid: number, root: string): Map<string, number> {
  const areas = new Map<string, number>();
  const add = (area: string) => areas.set(area, (areas.get(area) ?? 0) + 1000 / HZ);
  for (const sample of script.split('\n\n')) {
    const [head, ...frames] = sample.trim().split('\n');
    const tid = Number(head?.trim().split(/\s+/)[1]);
    if (!head || !Number.isFinite(tid)) continue;
    if (tid !== pid) {
      add('(other threads: V8 compiler and GC helpers, libuv)');
      continue;
    }
    let area: string | undefined;
    for (const frame of frames) {
      if (GC_FRAME.test(frame)) {
        area = 'GC';
        break;
      }
      const url = JS_FRAME.exec(frame)?.[1];
      area = url ? areaOfUrl(url, root) : undefined;
      if (area) break;
    }
    add(area ?? '(node internals only)');
  }
  return areas;
}

/** `JS:*name file:///…/dir/x.js:12:3+0x1f`: the frame's function name, its file's last two path parts and line. */
const JS_FUNCTION = /\sJS:\*?(\S*)\s+\S*?([^/\s]+\/[^/\s]+):(\d+):\d+\+0x/;

/**
 * CPU milliseconds of the main thread by its samples' nearest JS function (native, kernel and node:
 * frames charged to it), as perfCpuByArea charges areas: where in an area the time goes.
 */
export function perfCpuByFunction(script: string, pid: number): Map<string, number> {
  const functions = new Map<string, number>();
  for (const sample of script.split('\n\n')) {
    const [head, ...frames] = sample.trim().split('\n');
    if (Number(head?.trim().split(/\s+/)[1]) !== pid) continue;
    let name = '(no JS frame)';
    for (const frame of frames) {
      const m = JS_FUNCTION.exec(frame);
      if (m) {
        name = `${m[1] || '(anonymous)'} ${m[2]}:${m[3]}`;
        break;
      }
    }
    functions.set(name, (functions.get(name) ?? 0) + 1000 / HZ);
  }
  return functions;
}
