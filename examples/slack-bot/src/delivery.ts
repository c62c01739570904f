import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * How far a request's signed X-Slack-Request-Timestamp may lie from the bot's clock, either way.
 * Bolt refuses older requests only; one dated ahead would stay replayable for as long as it is ahead.
 */
const MAX_SKEW_SEC = 5 * 60;
/** Slack retries a delivery three times within about five minutes; an event id is kept well past that. */
const REMEMBER_MS = 60 * 60 * 1000;
/** Bounds the memory of a bot flooded with events: the oldest ids go first. */
const MAX_REMEMBERED = 10_000;

/** Whether a request's timestamp header lies within the window, in both directions. */
export function withinTimestampWindow(header: string | string[] | undefined, nowMs: number): boolean {
  const seconds = Number(typeof header === 'string' ? header : Number.NaN);
  return Number.isFinite(seconds) && Math.abs(nowMs / 1000 - seconds) <= MAX_SKEW_SEC;
}

/**
 * Wraps an HTTP request listener so that a request dated outside the window is refused (401) before
 * Bolt acknowledges it. Bolt checks the signature, which covers the timestamp, after this.
 */
export function refusingOutsideWindow(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  now: () => number = Date.now,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (req.headers['x-slack-request-timestamp'] !== undefined && !withinTimestampWindow(req.headers['x-slack-request-timestamp'], now())) {
      req.resume();
      res.writeHead(401).end();
      return;
    }
    listener(req, res);
  };
}

/**
 * The event ids the bot has taken in: Slack sends one event again when it saw no quick 200
 * (X-Slack-Retry-Num) or when a request is replayed; every copy carries the same event_id, so the
 * first one in is answered and the rest dropped. In memory: a bot run as several replicas needs a
 * shared store instead.
 */
export class SeenEvents {
  private readonly seen = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** True the first time `eventId` is offered within REMEMBER_MS, false for every copy after. */
  firstDelivery(eventId: string): boolean {
    const now = this.now();
    for (const [id, at] of this.seen) {
      if (now - at <= REMEMBER_MS && this.seen.size < MAX_REMEMBERED) break;
      this.seen.delete(id);
    }
    if (this.seen.has(eventId)) return false;
    this.seen.set(eventId, now);
    return true;
  }
}
