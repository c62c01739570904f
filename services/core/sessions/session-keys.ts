import { randomUUID } from 'node:crypto';
import { isErasedDuringRequest } from '../../db/repositories/erasures.js';
import { findOrCreateSessionByKey, findSessionIdByKey } from '../../db/repositories/session-keys.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryScope } from '../../model/sessions.js';
import type { MemoryDeps } from '../deps.js';
import { erasedDuringRequest } from '../turns/store-turn.js';
import { newSessionName } from './session-name.js';

/** Which conversation a request means: a session id, a client-chosen key, or neither (a new session). */
export interface SessionChoice {
  sessionId?: string;
  sessionKey?: string;
  /** The memory scope a session made now keeps (the request's `memory_scope`). */
  memoryScope?: MemoryScope;
}

export function assertOneSessionChoice(choice: SessionChoice): void {
  if (choice.sessionId !== undefined && choice.sessionKey !== undefined) {
    throw new AppError('validation-failed', 'send session_id or session_key, not both', {
      errors: [{ field: 'body.session_key', message: 'must not be sent with session_id' }],
    });
  }
}

/**
 * The session id a write goes to: with a key, the caller's live session with that key, created now
 * (named by `naming`, see newSessionName) when there is none (docs/memory-api.md, "Session keys"),
 * unless the user was erased since `eraseEpoch` was read: nothing is made then (erasures.ts).
 */
export async function sessionIdForWrite(
  deps: MemoryDeps,
  identity: Identity,
  choice: SessionChoice,
  naming: { sessionName?: string; question: string },
  eraseEpoch: number,
): Promise<string | undefined> {
  assertOneSessionChoice(choice);
  if (choice.sessionKey === undefined) return choice.sessionId;
  try {
    const { sessionId } = await findOrCreateSessionByKey(deps.db.asUser(identity), {
      identity,
      key: choice.sessionKey,
      now: deps.clock(),
      newSessionId: randomUUID(),
      newSessionName: newSessionName(deps, naming),
      ...(choice.memoryScope ? { newSessionScope: choice.memoryScope } : {}),
      ttlMs: deps.settings.ttlMs,
      eraseEpoch,
    });
    return sessionId;
  } catch (err) {
    if (isErasedDuringRequest(err)) throw erasedDuringRequest(err);
    throw new AppError('memory-store-unavailable', 'the session could not be found or created; please retry', { cause: err });
  }
}

/** The session id a read means: with a key, the live session with that key, or undefined (reads never create one). */
export async function sessionIdForRead(deps: MemoryDeps, identity: Identity, choice: SessionChoice): Promise<string | undefined> {
  assertOneSessionChoice(choice);
  if (choice.sessionKey === undefined) return choice.sessionId;
  return findSessionIdByKey(deps.db.asUser(identity), identity, choice.sessionKey, deps.clock());
}
