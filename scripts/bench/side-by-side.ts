// Systems measured side by side on the shared machine: short slices, alternating systems within
// each round, so that the machine's noise falls on all of them alike (`npm run bench -- memory-chat`, `citus`).
import { combine, type LoadResult, runLoad } from './load.js';
import { conversationClient, type TurnFn } from './workload.js';

export interface SideBySideOptions {
  /** Concurrency levels, each measured in turn. */
  levels: number[];
  /** Slices per system and level. */
  rounds: number;
  /** Measured seconds per slice. */
  seconds: number;
  log: (msg: string) => void;
}

export interface System {
  name: string;
  /** CPU time (ms) used so far by what this system's turns are charged to: [app process, database, parts of it…]. */
  cpu: [() => number, () => number, ...(() => number)[]];
  turnFor(clients: number): { turn: TurnFn; close?: () => Promise<void> };
}

/** CPU per turn (ms) of a system's service (app) and database (db), and of the further readers of its `cpu` (parts). */
export interface CpuPerTurn {
  app: number;
  db: number;
  parts?: number[];
}

/**
 * Side by side: for each concurrency, every system runs a short slice in turn, ROUNDS times, so
 * that the shared machine's noise falls on all of them alike. Clients keep their conversations
 * across slices. Returns, per system, one combined result per level and the per-round results.
 */
export async function sideBySide(systems: System[], users: number, opts: SideBySideOptions) {
  const { levels: LEVELS, rounds: ROUNDS, seconds: SECONDS, log } = opts;
  const LOAD = (clients: number) => ({ clients, warmupMs: 1500, durationMs: SECONDS * 1000, maxRequests: 100_000 });
  const combined = new Map<string, LoadResult[]>(systems.map((s) => [s.name, []]));
  const rounds = new Map<string, LoadResult[][]>(systems.map((s) => [s.name, []]));
  const cpuPerTurn = new Map<string, CpuPerTurn[]>(systems.map((s) => [s.name, []]));
  // Warm every system first (the embedded database's WebAssembly tiers up, caches fill): 4 s at 10 clients.
  for (const s of systems) {
    const { turn, close } = s.turnFor(10);
    await runLoad({ clients: 10, warmupMs: 0, durationMs: 4000, maxRequests: 1e6 }, (i) => conversationClient(90_000 + i, users, turn));
    await close?.();
  }
  log('warmed up');
  for (const clients of LEVELS) {
    const made = systems.map((s) => {
      const { turn, close } = s.turnFor(clients);
      return { s, close, fns: Array.from({ length: clients }, (_, i) => conversationClient(10_000 + i, users, turn)) };
    });
    const slices = new Map<string, LoadResult[]>(systems.map((s) => [s.name, []]));
    const cpu = new Map<string, { ms: number[]; turns: number }>(systems.map((s) => [s.name, { ms: s.cpu.map(() => 0), turns: 0 }]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const m of round % 2 ? [...made].reverse() : made) {
        const before = m.s.cpu.map((read) => read());
        const r = await runLoad({ ...LOAD(clients), warmupMs: round === 0 ? 1500 : 300 }, (i) => m.fns[i]!);
        const after = m.s.cpu.map((read) => read());
        const c = cpu.get(m.s.name)!;
        // Includes the warm-up turns: CPU per turn is charged over every turn of the slice.
        for (const [k, ms] of after.entries()) c.ms[k]! += ms - before[k]!;
        c.turns += r.requests + Math.round(r.rps * (round === 0 ? 1.5 : 0.3));
        slices.get(m.s.name)!.push(r);
      }
    }
    for (const [name, c] of cpu) {
      const [app, db, ...parts] = c.ms.map((ms) => ms / c.turns);
      cpuPerTurn.get(name)!.push({ app: app!, db: db!, ...(parts.length ? { parts } : {}) });
    }
    for (const m of made) {
      await m.close?.();
      const r = combine(slices.get(m.s.name)!);
      combined.get(m.s.name)!.push(r);
      rounds.get(m.s.name)!.push(slices.get(m.s.name)!.map(({ latencies: _, ...x }) => x));
      log(
        `${m.s.name} c=${clients}: ${r.rps.toFixed(0)}/s p50 ${r.p50.toFixed(1)} p95 ${r.p95.toFixed(1)} p99 ${r.p99.toFixed(1)} ms` +
          (r.errors ? ` errors ${r.errors} (${r.firstError})` : ''),
      );
    }
  }
  return { combined, rounds, cpuPerTurn };
}
