import { describe, expect, it } from 'vitest';
import { formatFleetReport, MAX_409_AFTER_KILL_MS, runFleetSoak } from '../../../scripts/soak/fleet.js';
import { TEST_REDIS_URL } from '../../support/databases/redis.js';

// The short form of `npm run soak -- --fleet` (docs/soak.md, "The fleet"). SOAK_SEED reproduces a run's workload.
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe('fleet soak: 2 APIs and 2 workers on a PostgreSQL server, SIGKILL of an API and of a worker, a database restart', () => {
  it('when 40 clients retry with Idempotency-Keys across two APIs while one API and one worker are killed with SIGKILL ' +
    'and the database restarts, then every acknowledged request has exactly one stored turn, every background job ' +
    'completes, and no key is refused with 409 for more than 30 s after its process died', async () => {
    const report = await runFleetSoak({
      clients: 40,
      durationMs: 24_000,
      answerMinMs: 50,
      answerMaxMs: 300,
      llmMinMs: 100,
      llmMaxMs: 600,
      // Longer than the 30 s bound from a kill at 6 s: a key released within the bound is acknowledged in time.
      drainMs: 20_000,
      jobWaitMs: 60_000,
      attemptTimeoutMs: 3_000,
      resendRate: 0.1,
      exportRate: 0.05,
      dbStopMode: 'immediate',
      seed: SEED,
      redisUrl: TEST_REDIS_URL,
      log: () => {},
    });
    console.log(`${formatFleetReport(report)}\n  seed=${SEED}`);

    expect(report.events.map((e) => [e.kind, e.exit?.signal])).toEqual([
      ['kill-api', 'SIGKILL'],
      ['kill-worker', 'SIGKILL'],
      ['restart-db', undefined],
    ]);
    expect(report.finalExits.map((f) => [f.name, f.exit.code])).toEqual([
      ['api-0', 0],
      ['api-1', 0],
      ['worker-0', 0],
      ['worker-1', 0],
    ]);
    // The kill caught requests in flight, and the clients caused background jobs of both kinds.
    expect(report.keysOrphanedByKill).toBeGreaterThan(0);
    expect(report.jobs.exportsAccepted).toBeGreaterThan(0);
    expect(report.jobs.sessionsDue).toBeGreaterThan(0);
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
      jobsLost: report.jobs.jobsLost,
    }).toEqual({
      lost: 0,
      duplicated: 0,
      misplaced: 0,
      unacknowledgedStored: 0,
      inconsistentSessions: 0,
      rejected: 0,
      unfinished: 0,
      resentDifferent: 0,
      jobsLost: 0,
    });
    expect(report.stored).toBe(report.acknowledged);
    expect(report.longest409AfterKillMs).toBeLessThanOrEqual(MAX_409_AFTER_KILL_MS);
    // An unavailable database or a closing process is a 503 problem the client may retry, never a 500.
    const unexpected5xx = Object.keys(report.problems).filter(
      (p) => p.startsWith('5') && p !== '503 memory-store-unavailable' && p !== '503 shutting-down',
    );
    expect(unexpected5xx).toEqual([]);
  }, 240_000);
});
