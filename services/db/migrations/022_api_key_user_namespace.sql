-- Which users a key may act for (docs/api-keys.md#user-namespace): a key with act_for_users names a
-- prefix of the user ids it may name in X-Memory-User (e.g. 'slack:T123:'), set when it is created
-- and never changed. The users it acts for are stored as 'key-user:<id>', apart from JWT subjects,
-- so no key reaches a user who signs in with a JWT.
--
-- Keys made before this migration have no namespace (NULL): they keep working as their own principal
-- and are refused acting for users (403) until an admin replaces them with a key that names one. No
-- namespace is guessed for them: the ids they named shared the space of JWT subjects, and a guessed
-- prefix would either bind a bot to the wrong users or leave it unbounded.
--
-- On a Citus coordinator api_keys is a reference table (migration 016), whose DDL goes to the workers
-- with the query string it came in; a string of several statements is refused there ("cannot insert
-- multiple commands into a prepared statement"), so each runs alone, through EXECUTE (as in 017).
DO $migration$
BEGIN
  EXECUTE $sql$
ALTER TABLE api_keys ADD COLUMN user_namespace text
  $sql$;
  EXECUTE $sql$
ALTER TABLE api_keys ADD CONSTRAINT api_keys_user_namespace_acting CHECK (user_namespace IS NULL OR act_for_users)
  $sql$;
END
$migration$;
