-- Memory the user controls (docs/memory-api.md#memory-scope) and recall bounded by answerer
-- (docs/design.md §5).
--
-- A session's stored scope: 'session' keeps the conversation to itself (it recalls no other
-- conversation, and no other conversation recalls it); 'user' shares it; NULL is the default, 'user'.
ALTER TABLE sessions ADD COLUMN memory_scope text CHECK (memory_scope IN ('user', 'session'));

-- Which answerer wrote a turn's SQL: 'upstream <url>', 'sql <database>/<schemas>' or 'none'
-- (services/config/answerer-identity.ts); NULL for turns a client stored through the memory API.
-- /memoryChat recalls across sessions only turns of its own answerer (or of none), so SQL never
-- crosses schemas. Turns stored before this migration have no record of who wrote them: they read
-- 'unrecorded', which no answerer recalls across sessions (they stay in their own conversation,
-- search, SQL recall and export). The constant default is stored once in the catalog (no table
-- rewrite); dropping it afterwards leaves the existing rows' value and makes new rows NULL unless
-- the insert names one.
ALTER TABLE turns ADD COLUMN answerer text DEFAULT 'unrecorded';
ALTER TABLE turns ALTER COLUMN answerer DROP DEFAULT;
