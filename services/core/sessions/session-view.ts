import type { SessionRow } from '../../model/sessions.js';

/** How a session is shown by every memory API route. */
export function sessionView(session: SessionRow) {
  return {
    session_id: session.session_id,
    session_key: session.session_key,
    session_name: session.session_name,
    message_count: session.turn_count,
    created_at: session.created_at.toISOString(),
    updated_at: session.updated_at.toISOString(),
    expires_at: session.expires_at.toISOString(),
    is_summarized: session.summary_text !== null,
    summary_through_turn: session.summary_through_turn,
    slots: session.slots,
    memory_scope: session.memory_scope,
  };
}

/** The session as /memoryChat reports it (docs/design.md §4 names the id `conversation_id`). */
export function conversationMetadata(session: SessionRow) {
  const { session_id, slots: _slots, ...rest } = sessionView(session);
  return { conversation_id: session_id, ...rest };
}
