import { describe, expect, inject, it } from 'vitest';
import { formatSoakReport, runSoak } from '../../../scripts/soak/soak.js';

// The short form of `npm run soak` (docs/soak.md). SOAK_SEED reproduces a run.
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe('soak: load with a service restart and a database restart', () => {
  it('when 30 clients retry with Idempotency-Keys through a service restart and a database restart, ' +
    'then every acknowledged request has exactly one stored turn where the service said, and nothing else is stored', async () => {
    const report = await runSoak({
      clients: 30,
      durationMs: 15_000,
      restart: 'both',
      answerMinMs: 50,
      answerMaxMs: 300,
      // Clients normally finish right after the 15 s; a request still retrying 10 s later is stuck
      // (e.g. on an Idempotency-Key claim that outlived the database restart, which holds for a minute).
      drainMs: 10_000,
      attemptTimeoutMs: 3_000,
      resendRate: 0.1,
      seed: SEED,
      templateDataDir: inject('templateDataDir'),
      log: () => {},
    });
    console.log(`${formatSoakReport(report)}\n  seed=${SEED}`);

    expect(report.restarts.map((r) => r.kind)).toEqual(['service', 'db']);
    expect(report.restarts[0]!.exit).toEqual({ code: 0, signal: null });
    expect(report.finalExit).toEqual({ code: 0, signal: null });
    expect(report.acknowledged).toBeGreaterThan(report.clients * 3);
    expect({
      lost: report.lost,
      duplicated: report.duplicated,
      misplaced: report.misplaced,
      unacknowledgedStored: report.unacknowledgedStored,
      inconsistentSessions: report.inconsistentSessions,
      rejected: report.rejected,
      unfinished: report.unfinished,
      resentDifferent: report.resentDifferent,
    }).toEqual({
      lost: 0,
      duplicated: 0,
      misplaced: 0,
      unacknowledgedStored: 0,
      inconsistentSessions: 0,
      rejected: 0,
      unfinished: 0,
      resentDifferent: 0,
    });
    expect(report.resent).toBeGreaterThan(0);
    expect(report.stored).toBe(report.acknowledged);
    // An unavailable database is a 503 problem the client may retry, never a 500.
    const unexpected5xx = Object.keys(report.problems).filter(
      (p) => p.startsWith('5') && p !== '503 memory-store-unavailable' && p !== '503 shutting-down',
    );
    expect(unexpected5xx).toEqual([]);
  }, 120_000);
});
