-- A GDPR export stored in parts (docs/design.md §7): each session and each turn is its own JSON
-- fragment, a turn larger than a part cut into several, so no export is one value. One jsonb value
-- holds no string over 256 MB and no document over 256 MB in all, so a single large answer made
-- every export of its user fail; a text part holds up to 1 GB and parts are written and read one at
-- a time. The download is the parts in order. Exports made before this keep their `payload`.
ALTER TABLE gdpr_exports ALTER COLUMN payload DROP NOT NULL;

CREATE TABLE gdpr_export_parts (
  tenant_id  text    NOT NULL,
  user_id    text    NOT NULL,
  request_id uuid    NOT NULL,
  part       integer NOT NULL,
  body       text    NOT NULL,
  PRIMARY KEY (tenant_id, user_id, request_id, part),
  -- Parts go with their export: its expiry (retention cleanup) and the user's erasure delete them.
  FOREIGN KEY (tenant_id, user_id, request_id) REFERENCES gdpr_exports ON DELETE CASCADE
);

GRANT SELECT, INSERT, UPDATE, DELETE ON gdpr_export_parts TO memorychat_app, memorychat_maintenance;
ALTER TABLE gdpr_export_parts ENABLE ROW LEVEL SECURITY;
ALTER TABLE gdpr_export_parts FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON gdpr_export_parts TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true));
CREATE POLICY all_rows ON gdpr_export_parts TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');
