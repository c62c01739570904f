-- The re-embedding job (core/jobs/re-embedding.ts) brings the tenant's verified pairs to the active
-- embedding model and lexical terms version as it does turns, as the cross-user maintenance role: it
-- reads and rewrites their vectors and terms.
GRANT SELECT, UPDATE ON verified_pairs TO memorychat_maintenance;
