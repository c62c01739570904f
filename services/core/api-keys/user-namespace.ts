import { AppError } from '../../model/errors.js';
import { normaliseIdentifier } from '../../model/identity.js';

/**
 * Which users an API key may act for (docs/api-keys.md#user-namespace). A key names a namespace, a
 * prefix of user ids such as `slack:T123:`; the users it acts for are stored under
 * `key-user:<their id>`, a space no JWT reaches: a JWT whose subject starts with a reserved prefix is
 * refused, so a JWT user `slack:T123:U1` stays apart from the key's `slack:T123:U1`.
 */
const KEY_USER_PREFIX = 'key-user:';
/** A key acting as itself (no X-Memory-User) is this principal of its tenant: its own memory. */
const KEY_PRINCIPAL_PREFIX = 'api-key:';
const RESERVED_PREFIXES = [KEY_USER_PREFIX, KEY_PRINCIPAL_PREFIX];

export function keyPrincipal(keyId: string): string {
  return `${KEY_PRINCIPAL_PREFIX}${keyId}`;
}

/** The stored user id of the end user a key acts for. */
export function keyActedUserId(userId: string): string {
  return `${KEY_USER_PREFIX}${userId}`;
}

/** A user id as its user knows it: a key-acted user's as the bot named it in X-Memory-User. */
export function userIdAsNamed(userId: string): string {
  return userId.startsWith(KEY_USER_PREFIX) ? userId.slice(KEY_USER_PREFIX.length) : userId;
}

/** Ids only the service makes: no JWT subject, X-Memory-User value or namespace may name them. */
export function isReservedUserId(userId: string): boolean {
  return RESERVED_PREFIXES.some((prefix) => userId.startsWith(prefix));
}

/**
 * The namespace a new key names, normalised as user ids are, or a 400. It ends with `:` so that
 * `slack:T1:` cannot take in the users of `slack:T12:`; required with act_for_users, refused without.
 */
export function userNamespaceOfNewKey(actForUsers: boolean, namespace: string | undefined): string | null {
  if (!actForUsers) {
    if (namespace !== undefined) throw invalidNamespace('needs act_for_users: a key that acts for no user has no namespace');
    return null;
  }
  if (namespace === undefined) throw invalidNamespace('is required with act_for_users: the prefix of the user ids the key may act for');
  const rule = normaliseIdentifier(namespace);
  if ('problem' in rule) throw invalidNamespace(rule.problem);
  if (rule.id.slice(0, -1).trim() === '') throw invalidNamespace('must name the users before its final ":"');
  if (!rule.id.endsWith(':'))
    throw invalidNamespace('must end with ":" (e.g. "slack:T123:"), so that it is not a prefix of another namespace');
  if (isReservedUserId(rule.id))
    throw invalidNamespace(`must not start with ${RESERVED_PREFIXES.join(' or ')}: those ids are the service's own`);
  return rule.id;
}

function invalidNamespace(message: string): AppError {
  return new AppError('validation-failed', `user_namespace ${message}`, { errors: [{ field: '/user_namespace', message }] });
}
