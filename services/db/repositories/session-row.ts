import type { MemoryScope, SessionRow } from '../../model/sessions.js';
import { sql } from '../sql.js';

/** The columns of a session that its readers and writers return. */
export const SESSION_COLUMNS = sql`session_id, session_key, session_name, created_at, updated_at, expires_at, turn_count,
  summary_text, summary_through_turn, slots, memory_scope`;

export function sessionFromJson(row: Record<string, unknown>): SessionRow {
  return {
    session_id: String(row.session_id),
    session_key: (row.session_key as string | null) ?? null,
    session_name: String(row.session_name),
    created_at: new Date(row.created_at as string),
    updated_at: new Date(row.updated_at as string),
    expires_at: new Date(row.expires_at as string),
    turn_count: Number(row.turn_count),
    summary_text: (row.summary_text as string | null) ?? null,
    summary_through_turn: (row.summary_through_turn as number | null) ?? null,
    slots: (row.slots as Record<string, unknown> | null) ?? {},
    memory_scope: (row.memory_scope as MemoryScope | null) ?? null,
  };
}
