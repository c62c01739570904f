import { describe, expect, it } from 'vitest';
import { coalescedReclaim } from '../../services/db/coalesced-reclaim.js';
import type { UserTable } from '../../services/db/user-tables.js';

/** A reclaim run that finishes when the test says so, recording the tables of each run. */
function controlledRuns() {
  const runs: { tables: UserTable[]; finish: () => void }[] = [];
  const started: (() => void)[] = [];
  const run = (tables: UserTable[]) =>
    new Promise<void>((resolve) => {
      runs.push({ tables, finish: resolve });
      started.shift()?.();
    });
  const nextStart = () => new Promise<void>((resolve) => started.push(resolve));
  return { runs, run, nextStart };
}

describe('coalescedReclaim', () => {
  it('when erasures ask for a reclaim within one window, then one run reclaims the union of their tables and answers all of them', async () => {
    const { runs, run, nextStart } = controlledRuns();
    const reclaim = coalescedReclaim(run, 50);
    const started = nextStart();
    const asked = [reclaim(['turns']), reclaim(['sessions', 'turns']), reclaim(['linked_identities'])];
    await started;
    expect(runs.map((r) => r.tables.sort())).toEqual([['linked_identities', 'sessions', 'turns']]);
    runs[0]!.finish();
    await Promise.all(asked);
    expect(runs).toHaveLength(1);
  });

  it('when an erasure asks while a run is under way, then it waits for a second run that starts after the first finished, shared by everyone who asked meanwhile', async () => {
    const { runs, run, nextStart } = controlledRuns();
    const reclaim = coalescedReclaim(run, 0);
    const firstStarted = nextStart();
    const first = reclaim(['turns']);
    await firstStarted;
    let secondDone = false;
    const second = Promise.all([reclaim(['sessions']), reclaim(['gdpr_exports'])]).then(() => {
      secondDone = true;
    });
    // The window of the second has long passed, but its run waits for the first.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runs).toHaveLength(1);
    const secondStarted = nextStart();
    runs[0]!.finish();
    await first;
    await secondStarted;
    expect(runs.map((r) => r.tables.sort())).toEqual([['turns'], ['gdpr_exports', 'sessions']]);
    expect(secondDone).toBe(false);
    runs[1]!.finish();
    await second;
  });

  it('when a run fails, then the erasures it covered get its error and the next run still happens', async () => {
    let calls = 0;
    const reclaim = coalescedReclaim(async () => {
      calls += 1;
      if (calls === 1) throw new Error('disk full');
    }, 0);
    await expect(reclaim(['turns'])).rejects.toThrow('disk full');
    await expect(reclaim(['turns'])).resolves.toBeUndefined();
    expect(calls).toBe(2);
  });
});
