import {
  clearSession,
  deleteSession,
  getSessionWithTurns,
  listSessions,
  type Retention,
  type SessionChanges,
  type SessionPageCursor,
  updateSession,
} from '../../db/repositories/sessions.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryDeps } from '../deps.js';
import { sessionView } from './session-view.js';
import { storedTurnView } from './turn-view.js';

export type { SessionChanges };

/**
 * Session operations of the memory API. Reads never extend a sliding session (only stored turns,
 * renames and clears count as activity): a bot polling its sessions must not keep them alive.
 */
export async function listUserSessions(deps: MemoryDeps, identity: Identity, limit: number, cursor?: string, key?: string) {
  const page = await listSessions(deps.db.asUser(identity), identity, deps.clock(), limit, cursor ? decodeCursor(cursor) : undefined, key);
  return { sessions: page.sessions.map(sessionView), next_cursor: page.next ? encodeCursor(page.next) : null };
}

export async function getUserSession(deps: MemoryDeps, identity: Identity, sessionId: string) {
  const found = await getSessionWithTurns(deps.db.asUser(identity), identity, sessionId, deps.clock());
  if (!found) throw notFound(sessionId);
  const windowStart = found.turns.length - deps.settings.maxTurnsPerSession;
  const covered = found.session.summary_through_turn ?? 0;
  return {
    ...sessionView(found.session),
    summary: found.session.summary_text,
    turns: found.turns.map((t, i) => ({
      ...storedTurnView(t),
      // Trimmed turns stay stored (and listed) until a summary covers them, but leave the context.
      in_context_window: i >= windowStart && t.turn_number > covered,
    })),
  };
}

export async function updateUserSession(deps: MemoryDeps, identity: Identity, sessionId: string, changes: SessionChanges) {
  const masked = changes.name === undefined ? changes : { ...changes, name: deps.pii.text(changes.name) };
  const session = await updateSession(deps.db.asUser(identity), identity, sessionId, masked, retention(deps));
  if (!session) throw notFound(sessionId);
  return sessionView(session);
}

export async function deleteUserSession(deps: MemoryDeps, identity: Identity, sessionId: string) {
  if (!(await deleteSession(deps.db.asUser(identity), identity, sessionId, deps.clock()))) throw notFound(sessionId);
}

export async function clearUserSession(deps: MemoryDeps, identity: Identity, sessionId: string) {
  const session = await clearSession(deps.db.asUser(identity), identity, sessionId, retention(deps));
  if (!session) throw notFound(sessionId);
  return sessionView(session);
}

export function notFound(sessionId: string) {
  return new AppError('session-not-found', `session ${sessionId} does not exist or has expired`);
}

function retention(deps: MemoryDeps): Retention {
  return { now: deps.clock(), ttlMs: deps.settings.ttlMs, ttlMode: deps.settings.ttlMode };
}

// The cursor is opaque to clients: base64url of the last session's position.
function encodeCursor(cursor: SessionPageCursor): string {
  return Buffer.from(JSON.stringify([cursor.updatedAt, cursor.sessionId])).toString('base64url');
}

// Postgres' text form of a timestamptz, e.g. "2025-01-02 03:04:05.678901+00".
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([+-]\d{2}(:?\d{2})?|Z)$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function decodeCursor(text: string): SessionPageCursor {
  try {
    const [updatedAt, sessionId] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[];
    if (typeof updatedAt === 'string' && TIMESTAMP.test(updatedAt) && typeof sessionId === 'string' && UUID.test(sessionId)) {
      return { updatedAt, sessionId };
    }
  } catch {
    // fall through to the problem below
  }
  throw new AppError('invalid-cursor', 'the cursor is not one this service returned; start again without it');
}
