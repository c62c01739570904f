import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Ids a client may choose: UUIDs, ULIDs, trace ids, `svc-1234:5`; short enough to log and store. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's id: the client's `X-Request-Id` when it is one we can log safely, otherwise a new
 * UUID. A bad id is replaced, not refused: it must never cost the caller their request.
 */
export function requestIdOf(req: IncomingMessage): string {
  const sent = req.headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
}
