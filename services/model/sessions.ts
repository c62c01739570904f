/**
 * Where a question's memory comes from (docs/memory-api.md#memory-scope): `user` also recalls the
 * user's similar turns of other sessions; `session` keeps to the conversation itself.
 */
export type MemoryScope = 'session' | 'user';

/** A live session as every layer reads it. */
export interface SessionRow {
  session_id: string;
  /** The client's own key for the conversation (a Slack thread, a Telegram chat), when it gave one. */
  session_key: string | null;
  session_name: string;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
  turn_count: number;
  summary_text: string | null;
  summary_through_turn: number | null;
  /** Carried-forward structured slots (docs/design.md §6 `context`), latest value per key. */
  slots: Record<string, unknown>;
  /** The scope the session keeps (a request may override it for itself); null: the default, `user`. */
  memory_scope: MemoryScope | null;
}
