-- Every primary and unique key leads with (tenant_id, user_id), so a distributed Postgres (Citus) can
-- shard each table by tenant or by user and keep a user's rows together
-- (test/api/schema-distribution.test.ts). gdpr_audit's key was (tenant_id, request_id); a request
-- belongs to the user it is about, its subject, so the key leads with that.
--
-- The audit row still outlives the erasure it records: erase deletes the user's sessions, turns,
-- exports and keys, never gdpr_audit rows, whatever their key. Requests are still found by id
-- (GET /gdpr/requests/{id}, and the job that runs one), through the index below; request ids are
-- random UUIDs made by the service.
ALTER TABLE gdpr_audit DROP CONSTRAINT gdpr_audit_pkey;
ALTER TABLE gdpr_audit ADD PRIMARY KEY (tenant_id, subject_user_id, request_id);
CREATE INDEX gdpr_audit_by_request ON gdpr_audit (tenant_id, request_id);
