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
}
