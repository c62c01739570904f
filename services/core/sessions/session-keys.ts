import { findSessionIdByKey } from '../../db/repositories/session-keys.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryDeps } from '../deps.js';
import { assertOneSessionChoice, type SessionChoice } from '../turns/turn-scope.js';

/** The session id a read means: with a key, the live session with that key, or undefined (reads never create one). */
export async function sessionIdForRead(deps: MemoryDeps, identity: Identity, choice: SessionChoice): Promise<string | undefined> {
  assertOneSessionChoice(choice);
  if (choice.sessionKey === undefined) return choice.sessionId;
  return findSessionIdByKey(deps.db.asUser(identity), identity, choice.sessionKey, deps.clock());
}
