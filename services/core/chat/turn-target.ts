import type { Identity } from '../../model/identity.js';
import type { MemoryScope } from '../../model/sessions.js';
import type { MemoryDeps } from '../deps.js';
import { newSessionName } from '../sessions/session-name.js';
import type { TurnTarget } from '../turns/store-turn.js';

/** The request's session, or a new one named after `session_name` or the question. */
export function turnTarget(
  deps: Pick<MemoryDeps, 'pii'>,
  req: {
    identity: Identity;
    question: string;
    sessionId?: string;
    sessionName?: string;
    memoryScope?: MemoryScope;
    eraseEpoch: number;
    annIndexed?: boolean;
  },
  sessionId: string,
  now: Date,
): TurnTarget {
  return {
    identity: req.identity,
    eraseEpoch: req.eraseEpoch,
    ...(req.annIndexed ? { annIndexed: true } : {}),
    sessionId,
    createWithName: req.sessionId ? undefined : newSessionName(deps, req),
    ...(req.sessionId || !req.memoryScope ? {} : { createWithScope: req.memoryScope }),
    now,
  };
}
