-- Memory API (DESIGN §6): near-duplicate turns and carried-forward slots.

-- A turn whose question is near-identical to a recent turn of the same session points at that
-- turn (the original, never another duplicate); search shows the original only.
ALTER TABLE turns ADD COLUMN duplicate_of integer;

-- Structured slots carried forward across turns ("span", "memberType"), merged on every turn write
-- (later values override earlier ones). Kept on the session so summarising or trimming old turns
-- does not lose them.
ALTER TABLE sessions ADD COLUMN slots jsonb NOT NULL DEFAULT '{}'::jsonb;
