import { randomUUID } from 'node:crypto';
import { isErasedDuringRequest, readEraseEpoch } from '../../db/repositories/erasures.js';
import { findOrCreateSessionByKey } from '../../db/repositories/session-keys.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryScope } from '../../model/sessions.js';
import type { MemoryDeps } from '../deps.js';
import { cutText } from '../text.js';

/** A new session's name, `session_name` or the start of the question, is cut to this many characters. */
const SESSION_NAME_CHARS = 100;

/**
 * What a request that may store a turn needs from the database and the clock, resolved once when it
 * starts (resolveTurnScope) and handed down as data: the memory read, the memory commands and the
 * turn writer take their time and session from it, and none reads them again.
 */
export interface TurnScope {
  identity: Identity;
  /** The request's one clock reading: its reads, its keyed session, its turn and its session's expiry. */
  now: Date;
  /** Whether the caller's turns are stored (docs/privacy.md#rollout): without, no session is found or made. */
  stores: boolean;
  /** The session the request resumes: named by its id, or found or made by its key. Undefined starts a conversation. */
  sessionId?: string;
  /**
   * The user's erasure epoch, read by the request's first statement, before it writes anything (the
   * barrier of docs/design.md §7). Undefined when that first statement is the memory read, which
   * brings it in the same round trip (turnTarget).
   */
  eraseEpoch?: number;
  /**
   * The name (`session_name`, else the start of the question) and memory scope of the session the
   * turn makes: set when the request names no session (no id, no key).
   */
  newSession?: { name: string; memoryScope?: MemoryScope };
}

/** Which conversation a request means: a session id, a client-chosen key, or neither (a new session). */
export interface SessionChoice {
  sessionId?: string;
  sessionKey?: string;
  /** The memory scope a session made now keeps (the request's `memory_scope`). */
  memoryScope?: MemoryScope;
}

/** Which conversation a request means, and what a session it makes is called. */
export interface ScopeRequest extends SessionChoice {
  identity: Identity;
  question: string;
  sessionName?: string;
}

/** Where a turn goes: the scope's session, or a new one, with the epoch its store compares with. */
export interface TurnTarget {
  identity: Identity;
  sessionId: string;
  createWithName?: string;
  /** The memory scope a new session keeps: the scope of the request that makes it. */
  createWithScope?: MemoryScope;
  now: Date;
  /** The user's erasure epoch when the request started: the turn is not stored if it moved since. */
  eraseEpoch: number;
  /** The request's retrieval searched the user's turns through the approximate index (AppendTurnRequest.annIndexed). */
  annIndexed?: boolean;
}

/**
 * Resolves the request's scope. The epoch is read first, on its own, when a key finds or makes the
 * session (that write is guarded by it) or when `epochWithMemoryRead` is false; otherwise the memory
 * read is the first statement and brings it. A caller whose turns are not stored gets no session.
 * A key's session is made, when there is none, with the scope's name and memory scope
 * (docs/memory-api.md, "Session keys"), unless the user was erased since the epoch was read.
 */
export async function resolveTurnScope(
  deps: Pick<MemoryDeps, 'db' | 'clock' | 'pii' | 'settings'>,
  asked: ScopeRequest,
  plan: { stores: boolean; epochWithMemoryRead: boolean },
): Promise<TurnScope> {
  const { identity, sessionKey } = asked;
  const now = deps.clock();
  if (!plan.stores) return { identity, now, stores: false };
  assertOneSessionChoice(asked);
  const eraseEpoch = sessionKey !== undefined || !plan.epochWithMemoryRead ? await eraseEpochAtStart(deps.db, identity) : undefined;
  const scope = { identity, now, stores: true, eraseEpoch };
  if (asked.sessionId !== undefined) return { ...scope, sessionId: asked.sessionId };
  // Masked before it is cut: a cut email is still personal data (docs/privacy.md).
  const newSession = {
    name: cutText(
      asked.sessionName !== undefined ? deps.pii.text(asked.sessionName) : deps.pii.text(asked.question).trim(),
      SESSION_NAME_CHARS,
    ),
    ...(asked.memoryScope ? { memoryScope: asked.memoryScope } : {}),
  };
  if (sessionKey === undefined) return { ...scope, newSession };
  try {
    const { sessionId } = await findOrCreateSessionByKey(deps.db.asUser(identity), {
      identity,
      key: sessionKey,
      now,
      newSessionId: randomUUID(),
      newSessionName: newSession.name,
      ...(newSession.memoryScope ? { newSessionScope: newSession.memoryScope } : {}),
      ttlMs: deps.settings.ttlMs,
      eraseEpoch: eraseEpoch ?? 0,
    });
    return { ...scope, sessionId };
  } catch (err) {
    if (isErasedDuringRequest(err)) throw erasedDuringRequest(err);
    throw new AppError('memory-store-unavailable', 'the session could not be found or created; please retry', { cause: err });
  }
}

/**
 * Where the scope's turn goes, with the epoch of the request's first statement: the scope's own, or
 * the memory read's (`memoryRead`), or, when that read failed, one read now, still before the
 * answerer is asked and before anything is written.
 */
export async function turnTarget(
  db: ScopedDatabase,
  scope: TurnScope,
  memoryRead?: { eraseEpoch: number; annIndexed: boolean },
): Promise<TurnTarget> {
  const eraseEpoch = scope.eraseEpoch ?? memoryRead?.eraseEpoch ?? (await eraseEpochAtStart(db, scope.identity));
  return {
    identity: scope.identity,
    now: scope.now,
    eraseEpoch,
    ...(memoryRead?.annIndexed ? { annIndexed: true } : {}),
    ...(scope.sessionId
      ? { sessionId: scope.sessionId }
      : {
          sessionId: randomUUID(),
          createWithName: scope.newSession?.name,
          ...(scope.newSession?.memoryScope ? { createWithScope: scope.newSession.memoryScope } : {}),
        }),
  };
}

export function assertOneSessionChoice(choice: SessionChoice): void {
  if (choice.sessionId !== undefined && choice.sessionKey !== undefined) {
    throw new AppError('validation-failed', 'send session_id or session_key, not both', {
      errors: [{ field: 'body.session_key', message: 'must not be sent with session_id' }],
    });
  }
}

export function erasedDuringRequest(cause?: unknown): AppError {
  return new AppError('erased-during-request', "the user's data was erased while this request ran; nothing of it was stored", {
    cause,
  });
}

/**
 * The user's erasure epoch, read when a request that stores starts, before it writes anything (a
 * keyed session, the turn): an erasure that begins after this refuses the request's writes.
 */
async function eraseEpochAtStart(db: ScopedDatabase, identity: Identity): Promise<number> {
  try {
    return await readEraseEpoch(db.asUser(identity), identity.tenantId, identity.userId);
  } catch (err) {
    throw new AppError('memory-store-unavailable', 'the memory store could not be read; please retry', { cause: err });
  }
}
