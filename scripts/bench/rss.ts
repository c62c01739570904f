// Resident memory of a process and its children from /proc (Linux): VmRSS now, VmHWM = peak.
import { readdirSync, readFileSync } from 'node:fs';

export interface Memory {
  rssMb: number;
  hwmMb: number;
}

export function memoryOf(pid: number): Memory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Samples VmRSS of the given processes every `everyMs` and keeps each one's maximum. */
export class RssSampler {
  readonly max = new Map<number, number>();
  private timer?: NodeJS.Timeout;
  constructor(
    private readonly pids: number[],
    everyMs = 100,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
    this.sample();
  }
  sample(): void {
    for (const pid of this.pids) {
      const m = memoryOf(pid);
      if (m) this.max.set(pid, Math.max(this.max.get(pid) ?? 0, m.rssMb));
    }
  }
  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }
}

/** CPU time (user + system) a process has used so far, in ms (Linux clock ticks of 10 ms). */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** CPU time a process has run so far, in ns: the first field of its schedstat (the scheduler's clock, not 10 ms ticks). */
export function runNsOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

/** The child of `pid` whose command line mentions `needle` (e.g. the embedded Postgres process). */
export function childMatching(pid: number, needle: string): number | undefined {
  return childrenOf(pid).find((c) => commandLineIncludes(c, needle));
}

export function commandLineIncludes(pid: number, needle: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle);
  } catch {
    return false;
  }
}
