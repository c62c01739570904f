import type { PairRow } from '../../db/repositories/verified-pairs.js';

/** A pair as the admin routes and a user's export show it. */
export function pairView(pair: PairRow) {
  const iso = (at: Date | null) => at?.toISOString() ?? null;
  return {
    pair_id: pair.pair_id,
    question: pair.question,
    sql_query: pair.sql_query,
    tables_used: pair.tables_used,
    vdp_database_names: pair.vdp_database_names,
    vdp_tag_names: pair.vdp_tag_names,
    author_user_id: pair.author_user_id,
    source: pair.source_session_id === null ? null : { session_id: pair.source_session_id, turn_number: pair.source_turn_number! },
    promoted_via: pair.promoted_via,
    promoted_at: pair.promoted_at.toISOString(),
    adopted_at: iso(pair.adopted_at),
    question_edited_at: iso(pair.question_edited_at),
    sql_edited_at: iso(pair.sql_edited_at),
    retired_at: iso(pair.retired_at),
    negative_feedback: pair.negative_feedback,
  };
}

export type PairView = ReturnType<typeof pairView>;
