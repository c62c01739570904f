-- A tenant's verified question/SQL pairs (docs/verified-pairs.md): a turn an admin promoted, or, where
-- the tenant turned it on, a turn its user rated up whose SQL ran. A pair is recalled for every user
-- of its tenant whose request's database scope covers its databases. It keeps the turn's question (as
-- stored: PII-masked), SQL, views, databases, tags, answerer, embedding and lexical terms, never the
-- rows of its answer.
CREATE TABLE verified_pairs (
  tenant_id           text        NOT NULL,
  pair_id             uuid        NOT NULL,
  -- NULL once the author of an adopted pair is erased and no admin had rewritten the question.
  question            text,
  sql_query           text        NOT NULL,
  tables_used         text[]      NOT NULL,
  vdp_database_names  text[]      NOT NULL,
  vdp_tag_names       text[]      NOT NULL DEFAULT '{}',
  answerer            text,
  -- Searched like turns, with the active model's vectors only; NULL with the question.
  embedding           vector,
  embedding_model     text,
  search_terms        tsvector,
  -- The user whose turn it came from; NULL once they are erased (the pair survives only when adopted).
  author_user_id      text,
  source_session_id   uuid,
  source_turn_number  integer,
  promoted_via        text        NOT NULL CHECK (promoted_via IN ('admin', 'feedback')),
  promoted_at         timestamptz NOT NULL,
  -- An admin took the pair on as the tenant's own: it outlives its author's erasure.
  adopted_at          timestamptz,
  question_edited_at  timestamptz,
  sql_edited_at       timestamptz,
  retired_at          timestamptz,
  PRIMARY KEY (tenant_id, pair_id),
  CHECK (author_user_id IS NOT NULL OR adopted_at IS NOT NULL)
);
CREATE INDEX verified_pairs_by_author ON verified_pairs (tenant_id, author_user_id) WHERE author_user_id IS NOT NULL;
CREATE INDEX verified_pairs_by_source ON verified_pairs (tenant_id, author_user_id, source_session_id, source_turn_number)
  WHERE retired_at IS NULL;
CREATE INDEX verified_pairs_live ON verified_pairs (tenant_id, embedding_model) WHERE retired_at IS NULL;

-- Users' negative feedback on answers whose memory held a pair: one row per rated turn and pair,
-- removed with the turn (its deletion, its user's erasure), with the pair, or when the rating changes.
-- Its foreign keys are added at the end, once Citus has placed the tables (below).
CREATE TABLE verified_pair_feedback (
  tenant_id    text        NOT NULL,
  user_id      text        NOT NULL,
  session_id   uuid        NOT NULL,
  turn_number  integer     NOT NULL,
  pair_id      uuid        NOT NULL,
  at           timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, user_id, session_id, turn_number, pair_id)
);
CREATE INDEX verified_pair_feedback_by_pair ON verified_pair_feedback (tenant_id, pair_id);

-- A tenant's own settings, one row per tenant that changed one.
CREATE TABLE tenant_settings (
  tenant_id                  text        NOT NULL PRIMARY KEY,
  -- A turn rated up whose SQL ran becomes a verified pair without an admin.
  pairs_from_positive_feedback boolean   NOT NULL DEFAULT false,
  updated_at                 timestamptz NOT NULL
);

GRANT SELECT, INSERT, UPDATE, DELETE ON verified_pairs TO memorychat_app;
GRANT SELECT, INSERT, DELETE ON verified_pair_feedback TO memorychat_app;
GRANT SELECT, INSERT, UPDATE ON tenant_settings TO memorychat_app;
ALTER TABLE verified_pairs ENABLE ROW LEVEL SECURITY;
ALTER TABLE verified_pairs FORCE ROW LEVEL SECURITY;
ALTER TABLE verified_pair_feedback ENABLE ROW LEVEL SECURITY;
ALTER TABLE verified_pair_feedback FORCE ROW LEVEL SECURITY;
ALTER TABLE tenant_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_settings FORCE ROW LEVEL SECURITY;

-- Every user of a tenant reads its pairs (recall); its admins write them; the author may store a pair
-- from their own turn (promotion by feedback) and, at their erasure, delete theirs or take their name
-- off an adopted one (author NULL passes the check).
CREATE POLICY tenant_reads ON verified_pairs FOR SELECT TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true));
CREATE POLICY tenant_admin_writes ON verified_pairs TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND current_setting('memorychat.tenant_admin', true) = 'on')
  WITH CHECK (tenant_id = current_setting('memorychat.tenant_id', true)
              AND current_setting('memorychat.tenant_admin', true) = 'on');
CREATE POLICY author_rows ON verified_pairs TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND author_user_id = current_setting('memorychat.user_id', true))
  WITH CHECK (tenant_id = current_setting('memorychat.tenant_id', true)
              AND (author_user_id = current_setting('memorychat.user_id', true) OR author_user_id IS NULL));
-- No job reads pairs: the maintenance role has no grant; its policy only keeps to the shape.
CREATE POLICY all_rows ON verified_pairs TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');

CREATE POLICY own_rows ON verified_pair_feedback TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true))
  WITH CHECK (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true));
CREATE POLICY tenant_admin_reads ON verified_pair_feedback FOR SELECT TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND current_setting('memorychat.tenant_admin', true) = 'on');
CREATE POLICY all_rows ON verified_pair_feedback TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');

CREATE POLICY tenant_reads ON tenant_settings FOR SELECT TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true));
CREATE POLICY tenant_admin_writes ON tenant_settings TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND current_setting('memorychat.tenant_admin', true) = 'on')
  WITH CHECK (tenant_id = current_setting('memorychat.tenant_id', true)
              AND current_setting('memorychat.tenant_admin', true) = 'on');
CREATE POLICY all_rows ON tenant_settings TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');

-- Admins' actions on pairs and settings are in the access audit. access_audit is distributed on Citus
-- (migration 016): each DDL statement runs alone, through EXECUTE, and the shards are changed one
-- connection at a time for the rest of the transaction, since the foreign keys below cannot follow a
-- parallel operation on a distributed table (as in 017; on a single server an unused placeholder).
DO $migration$
BEGIN
  PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
  EXECUTE $sql$
ALTER TABLE access_audit DROP CONSTRAINT access_audit_action_check
  $sql$;
  EXECUTE $sql$
ALTER TABLE access_audit ADD CONSTRAINT access_audit_action_check
  CHECK (action IN ('export', 'erase', 'download', 'admin_read', 'act_for_user',
                    'pair_promote', 'pair_edit', 'pair_retire', 'pair_adopt', 'tenant_settings'))
  $sql$;
END
$migration$;

-- Citus (migration 016): pairs and settings are read by every user of a tenant, so they are reference
-- tables (a copy on each node, read beside the user's shard; written rarely: a promotion, an edit).
-- The feedback rows are per user, on the user's shard beside their turns.
DO $$
DECLARE
  spec text[];
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
    RETURN;
  END IF;
  FOREACH spec SLICE 1 IN ARRAY ARRAY[
    ['verified_pairs', NULL],
    ['tenant_settings', NULL],
    ['verified_pair_feedback', 'user_id']
  ] LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = spec[1]::regclass);
    EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', spec[1]);
    IF spec[2] IS NULL THEN
      PERFORM create_reference_table(spec[1]);
    ELSE
      PERFORM create_distributed_table(spec[1], spec[2], colocate_with => 'sessions');
    END IF;
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', spec[1]);
  END LOOP;
END
$$;

-- The feedback goes with its turn and with its pair. On Citus a local table may hold no foreign key
-- to a distributed one, so they come after the distribution, each statement alone (as in 017).
DO $migration$
BEGIN
  EXECUTE $sql$
ALTER TABLE verified_pair_feedback ADD FOREIGN KEY (tenant_id, user_id, session_id, turn_number) REFERENCES turns ON DELETE CASCADE
  $sql$;
  EXECUTE $sql$
ALTER TABLE verified_pair_feedback ADD FOREIGN KEY (tenant_id, pair_id) REFERENCES verified_pairs ON DELETE CASCADE
  $sql$;
END
$migration$;
