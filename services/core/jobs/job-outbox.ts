import {
  type ClaimedJob,
  claimHeldJobs,
  deleteHeldJob,
  deleteUserHeldJobs,
  type HeldJob,
  insertHeldJob,
  releaseHeldJobs,
} from '../../db/repositories/job-outbox.js';
import type { Queryable } from '../../db/repositories/queryable.js';
import type { JobLogger } from '../job-queue.js';

export type { ClaimedJob, HeldJob };

const BATCH = 100;
/** Longer than any hand-over takes; a dispatcher that dies mid-batch leaves its rows to others after this. */
const LEASE_MS = 60_000;
/** The backstop: jobs held by a process that never saw Redis come back, or refused while Redis looked up. */
const POLL_MS = 5_000;

export interface JobOutboxOptions {
  /** Job bookkeeping across users (the maintenance scope): the dispatcher reads every user's held jobs. */
  db: Queryable;
  /** Adds the job to Redis under its job id; throws when Redis does not take it. */
  send: (job: ClaimedJob) => Promise<void>;
  log: JobLogger;
}

/**
 * Jobs that Redis could not take, kept in Postgres (migration 006) and handed to it once it answers:
 * on `kick()` (Redis reconnected) and every few seconds. A hand-over adds the job under the id it was
 * held with, then deletes the row; if the delete is lost, the next hand-over finds the job already in
 * Redis and adds nothing, so each held job is enqueued exactly once.
 */
export class JobOutbox {
  private draining?: Promise<number>;
  private again = false;
  private timer?: NodeJS.Timeout;

  constructor(private readonly options: JobOutboxOptions) {}

  /** Holds a job; false when the same job (or one with its dedup key) is already held. */
  hold(job: HeldJob): Promise<boolean> {
    return insertHeldJob(this.options.db, job);
  }

  /** GDPR erase: the user's held summarizations. */
  removeUserJobs(tenantId: string, userId: string): Promise<number> {
    return deleteUserHeldJobs(this.options.db, tenantId, userId);
  }

  /** Hands held jobs over now, in the background. */
  kick(): void {
    this.drain().catch((err) => this.options.log.warn({ err }, 'handing held jobs to Redis failed; retrying on the next tick'));
  }

  /**
   * Hands every held job to Redis, oldest first, stopping at the first one Redis refuses. One pass
   * runs at a time; a call during a pass makes it go round once more, and resolves with it.
   */
  drain(): Promise<number> {
    if (this.draining) {
      this.again = true;
      return this.draining;
    }
    this.draining = (async () => {
      let sent = 0;
      try {
        do {
          this.again = false;
          sent += await this.pass();
        } while (this.again);
      } finally {
        this.draining = undefined;
      }
      return sent;
    })();
    return this.draining;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.kick(), POLL_MS);
    this.timer.unref();
  }

  /** Stops the timer and waits for a running pass. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.draining?.catch(() => {});
  }

  private async pass(): Promise<number> {
    const { db, send, log } = this.options;
    let sent = 0;
    for (;;) {
      const batch = await claimHeldJobs(db, BATCH, LEASE_MS);
      if (!batch.length) return sent;
      for (const [i, job] of batch.entries()) {
        try {
          await send(job);
        } catch (err) {
          log.warn({ err, held: batch.length - i }, 'Redis did not take the held jobs; they wait for the next attempt');
          await releaseHeldJobs(db, batch.slice(i));
          return sent;
        }
        await deleteHeldJob(db, job);
        sent += 1;
      }
      log.info({ sent }, 'held jobs handed to Redis');
    }
  }
}
