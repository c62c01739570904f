import { describe, expect, it } from 'vitest';
import { createFairQueue, SlotWaitTimeoutError } from '../../../../services/providers/answerers/sql/sql-fair-queue.js';

/** Who got a connection, in order: each waiter records its tenant when it is served. */
function recorder() {
  const served: string[] = [];
  return {
    served,
    wait: (queue: ReturnType<typeof createFairQueue>, tenant: string) =>
      queue.acquire(tenant).then((release) => {
        served.push(tenant);
        return release;
      }),
  };
}

describe('the SQL answerer: connections shared between tenants', () => {
  it('when two tenants keep questions queued, then a third tenant is served by the next connection that comes free', async () => {
    const queue = createFairQueue(2, 60_000);
    const { served, wait } = recorder();
    const held = [await wait(queue, 'a'), await wait(queue, 'b')];
    const queued = ['a', 'a', 'b', 'b', 'a', 'c'].map((tenant) => wait(queue, tenant));
    held[0]!();
    const first = await Promise.race(queued);
    expect(served.at(-1)).toBe('c');
    // Then each free connection to the tenant holding fewer (c's to a, b's own back to b), each
    // tenant's own in arrival order.
    first();
    held[1]!();
    for (const next of queued) (await next)();
    expect(served.slice(2)).toEqual(['c', 'a', 'b', 'a', 'a', 'b']);
  });

  it('when a tenant gives its only connection back while another tenant waits, then the other tenant goes first', async () => {
    const queue = createFairQueue(1, 60_000);
    const { served, wait } = recorder();
    const running = await wait(queue, 'a');
    const again = wait(queue, 'a');
    const other = wait(queue, 'b');
    running();
    (await other)();
    (await again)();
    expect(served).toEqual(['a', 'b', 'a']);
  });

  it('when no connection comes free within the wait, or the asker goes away, then it leaves the queue and the next is served', async () => {
    const queue = createFairQueue(1, 50);
    const running = await queue.acquire('a');
    await expect(queue.acquire('b')).rejects.toBeInstanceOf(SlotWaitTimeoutError);
    const gone = new AbortController();
    const leaving = queue.acquire('c', gone.signal);
    gone.abort(new Error('client went away'));
    await expect(leaving).rejects.toThrow('client went away');
    const patient = createFairQueue(1, 60_000);
    const holding = await patient.acquire('a');
    const next = patient.acquire('d');
    holding();
    holding();
    (await next)();
    running();
    (await queue.acquire('e'))();
  });
});
