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

  /** Turns `POST /memory/search` can return: one of each near-duplicate pair (the original). */
  searchable(sessionId?: string): ModelTurn[] {
    return this.live()
      .filter((s) => !sessionId || s.id === sessionId)
      .flatMap((s) => s.turns.filter((t) => t.duplicateOf === null || !s.turns.some((o) => o.number === t.duplicateOf)));
  }

  addSession(id: string, name: string): ModelSession {
    const session: ModelSession = { id, name, live: true, turns: [], lastNumber: 0 };
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

  /** GDPR erasure: sessions, turns, exports and stored Idempotency-Key responses are gone. */
  erase(): void {
    for (const session of this.sessions) session.live = false;
    this.keys.clear();
    this.liveExports.clear();
  }
}
