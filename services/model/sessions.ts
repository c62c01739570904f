/** A live session as every layer reads it. */
export interface SessionRow {
  session_id: string;
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
