/** No connection came free for this tenant within the wait (SQL_POOL_WAIT_MS). */
export class SlotWaitTimeoutError extends Error {
  override name = 'SlotWaitTimeoutError';
}

export interface FairQueue {
  /**
   * Waits for one of the connections, at most `waitMs` (then SlotWaitTimeoutError) or until
   * `signal` aborts (then its reason); the result gives the connection back, once.
   */
  acquire(tenant: string, signal?: AbortSignal): Promise<() => void>;
}

interface Waiter {
  grant(): void;
}

interface Share {
  held: number;
  /** When this tenant was last given a connection (a counter); a tenant new to the queue has none. */
  lastServed?: number;
  waiting: Waiter[];
}

/**
 * Shares `capacity` connections between tenants: a free connection goes to the waiting tenant that
 * holds the fewest, and between equals to the one served longest ago (a tenant that holds none and
 * waits for none is forgotten, so it counts as never served); a tenant's own questions go in the
 * order they came. pg-pool alone served in arrival order, so tenants that kept the queue full (two
 * tenants, 3 users each, slow questions) left a third tenant 3 answers in 23; here the third tenant
 * takes the next connection that comes free. Nothing is taken from a tenant that holds one: the
 * question's time bound (sql-database.ts) is what frees it.
 */
export function createFairQueue(capacity: number, waitMs: number): FairQueue {
  let free = capacity;
  let served = 0;
  const shares = new Map<string, Share>();

  const shareOf = (tenant: string): Share => {
    let share = shares.get(tenant);
    if (!share) {
      share = { held: 0, waiting: [] };
      shares.set(tenant, share);
    }
    return share;
  };
  const forgetIdle = (tenant: string, share: Share) => {
    if (share.held === 0 && share.waiting.length === 0) shares.delete(tenant);
  };
  const take = (tenant: string, share: Share): (() => void) => {
    free--;
    share.held++;
    share.lastServed = served++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      free++;
      share.held--;
      forgetIdle(tenant, share);
      serveNext();
    };
  };
  const serveNext = () => {
    while (free > 0) {
      let next: [string, Share] | undefined;
      for (const entry of shares) {
        const share = entry[1];
        if (!share.waiting.length) continue;
        if (!next || before(share, next[1])) next = entry;
      }
      if (!next) return;
      next[1].waiting[0]!.grant();
    }
  };

  return {
    acquire(tenant, signal) {
      signal?.throwIfAborted();
      const share = shareOf(tenant);
      if (free > 0 && !waitingAnywhere()) return Promise.resolve(take(tenant, share));
      return new Promise((resolve, reject) => {
        const leave = (err: unknown) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          share.waiting.splice(share.waiting.indexOf(waiter), 1);
          forgetIdle(tenant, share);
          reject(err);
        };
        const waiter: Waiter = {
          grant() {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            share.waiting.splice(share.waiting.indexOf(waiter), 1);
            resolve(take(tenant, share));
          },
        };
        const onAbort = () => leave(signal!.reason);
        const timer = setTimeout(() => leave(new SlotWaitTimeoutError(`no connection came free within ${waitMs} ms`)), waitMs);
        signal?.addEventListener('abort', onAbort, { once: true });
        share.waiting.push(waiter);
        serveNext();
      });
    },
  };

  function waitingAnywhere(): boolean {
    for (const share of shares.values()) if (share.waiting.length) return true;
    return false;
  }
}

function before(a: Share, b: Share): boolean {
  if (a.held !== b.held) return a.held < b.held;
  return (a.lastServed ?? -1) < (b.lastServed ?? -1);
}
