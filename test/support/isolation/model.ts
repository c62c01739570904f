import type { Principal } from './world.js';

/**
 * What one principal has stored, as far as the service's answers to that principal so far say.
 * Operations of one principal never run concurrently, so at any request the model is exact and
 * every count the service reports can be predicted.
 */

export interface ModelTurn {
  number: number;
  question: string;
  hasSql: boolean;
  hasResult: boolean;
  /** `ok` turns steer SQL and appear as related memories; `clarification` ones do not. */
  ok: boolean;
  duplicateOf: number | null;
}

export interface ModelSession {
  id: string;
  name: string;
  /** Named after its first question (no session_name given, never renamed): a clear renames it. */
  namedByQuestion: boolean;
  /** memory_scope "session": searched only by its own id. */
  keptToItself: boolean;
  live: boolean;
  turns: ModelTurn[];
  /** Turn numbers keep growing through clears. */
  lastNumber: number;
}

/** A stored Idempotency-Key: what the first successful request with it answered. */
export interface KeyRecord {
  fingerprint: string;
  status: number;
  body: unknown;
  /** The session the request wrote into: its clear or deletion deletes the stored reply. */
  sessionId: string;
}

export type SqlRef = 'first' | 'last' | 'previous' | number;

export class PrincipalModel {
  readonly sessions: ModelSession[] = [];
  readonly keys = new Map<string, KeyRecord>();
  /** Completed exports of this principal's data that can still be downloaded. */
  readonly liveExports = new Set<string>();

  constructor(readonly principal: Principal) {}

  live(): ModelSession[] {
    return this.sessions.filter((s) => s.live);
  }

  liveSession(id: string): ModelSession | undefined {
    return this.sessions.find((s) => s.id === id && s.live);
  }

  liveTurnCount(): number {
    return this.live().reduce((n, s) => n + s.turns.length, 0);
  }

  /**
   * Turns `POST /memory/search` can return: of the session it names, else of every live session not
   * kept to itself (memory_scope "session"); one of each near-duplicate pair (the original).
   */
  searchable(sessionId?: string): ModelTurn[] {
    return originals(this.live().filter((s) => (sessionId ? s.id === sessionId : !s.keptToItself)));
  }

  /** Turns `/memoryChat` may recall as similar, an upper bound: of every live session, originals only. */
  recallable(): ModelTurn[] {
    return originals(this.live());
  }

  addSession(id: string, name: string, namedByQuestion: boolean): ModelSession {
    const session: ModelSession = { id, name, namedByQuestion, keptToItself: false, live: true, turns: [], lastNumber: 0 };
    this.sessions.push(session);
    return session;
  }

  addTurn(session: ModelSession, turn: Omit<ModelTurn, 'number'>): ModelTurn {
    session.lastNumber += 1;
    const stored = { ...turn, number: session.lastNumber };
    session.turns.push(stored);
    return stored;
  }

  /**
   * The `duplicate_of` a new question gets (services/core/sessions/turns.ts): the original of an
   * identical question among the session's latest `window` turns. Distinct questions here never
   * come near the 0.97 similarity threshold.
   */
  expectedDuplicateOf(session: ModelSession, question: string, window: number): number | null {
    const same = session.turns.slice(-window).filter((t) => t.question === question);
    const first = same.at(-1);
    return first ? (first.duplicateOf ?? first.number) : null;
  }

  /** The turn `GET /sessions/{id}/turns/{ref}/sql` resolves to, before the has-SQL check. */
  turnByRef(session: ModelSession, ref: SqlRef): ModelTurn | undefined {
    if (typeof ref === 'number') return session.turns.find((t) => t.number === ref);
    const withSql = session.turns.filter((t) => t.hasSql);
    if (ref === 'first') return withSql[0];
    return ref === 'last' ? withSql.at(-1) : withSql.at(-2);
  }

  /** The latest turn with SQL whose question contains the word (ILIKE, so case-insensitive). */
  turnByKeyword(session: ModelSession, word: string): ModelTurn | undefined {
    return session.turns.filter((t) => t.hasSql && t.question.toLowerCase().includes(word.toLowerCase())).at(-1);
  }

  /**
   * A session cleared or deleted (services/db/repositories/sessions.ts): the replies stored for writes
   * into it are deleted, so a retry with such a key runs anew; a name taken from its first question
   * becomes "Forgotten conversation".
   */
  forget(session: ModelSession): void {
    for (const [key, record] of this.keys) if (record.sessionId === session.id) this.keys.delete(key);
    if (session.namedByQuestion && session.turns.length > 0) session.name = 'Forgotten conversation';
    session.namedByQuestion = false;
  }

  /** GDPR erasure: sessions, turns, exports and stored Idempotency-Key responses are gone. */
  erase(): void {
    for (const session of this.sessions) session.live = false;
    this.keys.clear();
    this.liveExports.clear();
  }
}

function originals(sessions: ModelSession[]): ModelTurn[] {
  return sessions.flatMap((s) => s.turns.filter((t) => t.duplicateOf === null || !s.turns.some((o) => o.number === t.duplicateOf)));
}
