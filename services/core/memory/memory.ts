import type { SessionRow } from '../../model/sessions.js';
import type { ScopedDatabase } from '../../../db/row-security.js';
import type { Embedder } from '../../providers/embeddings/embedder.js';
import type { TurnStoredEvent } from './chat.js';

export interface MemoryApiSettings {
  ttlMs: number;
  ttlMode: 'sliding' | 'absolute';
  /** MEMORY_MAX_TURNS_PER_SESSION: the context window of a session. */
  maxTurnsPerSession: number;
  dedupSimilarity: number;
  semanticSearchK: number;
  minSimilarity: number;
  maxContextTokens: number;
}

/** The collaborators of the memory API (docs/design.md §6); the routes pass them, tests build the real ones. */
export interface MemoryApiDeps {
  db: ScopedDatabase;
  embedder: Embedder;
  clock: () => Date;
  settings: MemoryApiSettings;
  log: { warn(obj: object, msg: string): void };
  /** Queues summarization when the session is due (docs/design.md §7); the same hook as /memoryChat's. */
  afterTurnStored?: (event: TurnStoredEvent) => Promise<unknown>;
}

/** How a session is shown by every memory API route. */
export function sessionView(session: SessionRow) {
  return {
    session_id: session.session_id,
    session_name: session.session_name,
    message_count: session.turn_count,
    created_at: session.created_at.toISOString(),
    updated_at: session.updated_at.toISOString(),
    expires_at: session.expires_at.toISOString(),
    is_summarized: session.summary_text !== null,
    summary_through_turn: session.summary_through_turn,
    slots: session.slots,
  };
}
