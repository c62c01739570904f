-- Account linking (docs/account-linking.md): a bot's user signs in once with the OpenID provider that
-- Denodo trusts, and memorychat keeps that user's tokens to call the Denodo AI SDK as them.
--
-- One row per memorychat user (tenant, user id as the bot names them): the sign-in in progress, if any,
-- and the linked account, if any. Tokens are never stored in clear: `sealed_tokens` is AES-256-GCM of
-- the provider's tokens under the key named by `key_id` (ACCOUNT_LINK_KEYS), bound to the row's tenant
-- and user, so the database alone does not give them away and a row copied to another user does not open.
CREATE TABLE linked_identities (
  tenant_id            text        NOT NULL,
  user_id              text        NOT NULL,
  -- The sign-in in progress: the id its `state` names, its PKCE verifier (sealed), and until when it may finish.
  pending_link_id      uuid,
  pending_sealed       bytea,
  pending_expires_at   timestamptz,
  -- The linked account: the provider and its subject, as the ID token of the sign-in named them.
  issuer               text,
  subject              text,
  username             text,
  key_id               text,
  sealed_tokens        bytea,
  access_expires_at    timestamptz,
  -- When the provider says how long its refresh token lasts (refresh_expires_in); NULL: it did not.
  refresh_expires_at   timestamptz,
  -- Moves with every write of the tokens: a refresh stores its tokens only over the version it read.
  token_version        bigint      NOT NULL DEFAULT 0,
  -- One refresh at a time per user, across processes: a refresh with a rotated refresh token used
  -- twice makes providers revoke the whole grant.
  refresh_lease_until  timestamptz,
  linked_at            timestamptz,
  refreshed_at         timestamptz,
  -- The provider refused a refresh, or the answerer refused the token: the user must sign in again.
  -- The tokens are gone (sealed_tokens NULL); the row says why the next question is refused.
  expired_at           timestamptz,
  created_at           timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, user_id),
  CHECK ((sealed_tokens IS NULL) = (key_id IS NULL)),
  CHECK ((pending_link_id IS NULL) = (pending_sealed IS NULL) AND (pending_link_id IS NULL) = (pending_expires_at IS NULL))
);

-- Retention cleanup: abandoned sign-ins and links that can give no token any more.
CREATE INDEX linked_identities_pending_expiry ON linked_identities (pending_expires_at) WHERE pending_expires_at IS NOT NULL;

GRANT SELECT, INSERT, UPDATE, DELETE ON linked_identities TO memorychat_app;
GRANT SELECT, UPDATE, DELETE ON linked_identities TO memorychat_maintenance;
ALTER TABLE linked_identities ENABLE ROW LEVEL SECURITY;
ALTER TABLE linked_identities FORCE ROW LEVEL SECURITY;

-- A user reads and writes their own link only; the sign-in's callback knows the user from its sealed
-- state and acts as them. Retention works across users as maintenance.
CREATE POLICY own_rows ON linked_identities TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true))
  WITH CHECK (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true));
CREATE POLICY all_rows ON linked_identities TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');

-- Citus (migration 016): a per-user table, on its user's shard beside their sessions.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'linked_identities'::regclass) THEN
    RETURN;
  END IF;
  ALTER TABLE linked_identities NO FORCE ROW LEVEL SECURITY;
  PERFORM create_distributed_table('linked_identities', 'user_id', colocate_with => 'sessions');
  ALTER TABLE linked_identities FORCE ROW LEVEL SECURITY;
END
$$;
