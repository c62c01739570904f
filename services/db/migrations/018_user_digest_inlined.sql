-- memorychat_user_digest (migration 011) was declared IMMUTABLE, but its body calls convert_to, which is
-- STABLE, and the planner inlines no IMMUTABLE SQL function whose body is not: every statement naming a
-- user's digest (the retrieval's erasure epoch, the append's erasure barrier, the row-level security of
-- erasures) called it as a SQL function, its body planned again on each execution. That was 7% of the
-- server's CPU under /memoryChat's load, and declared STABLE, as what it calls is, it is inlined: the
-- two statements' backend CPU fell from 1.249 to 1.143 ms a turn (docs/performance.md). The digests
-- are the same; no index or generated column uses the function, which would need it IMMUTABLE.
ALTER FUNCTION memorychat_user_digest(text) STABLE;
