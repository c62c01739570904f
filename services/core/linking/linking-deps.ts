import type { AccountLinkingSettings } from '../../config/config.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import type { Identity } from '../../model/identity.js';
import type { OpenIdProvider } from '../../providers/identity/openid-provider.js';
import { keyPrincipal } from '../api-keys/user-namespace.js';

/** What account linking works with (docs/account-linking.md). */
export interface LinkingDeps {
  db: ScopedDatabase;
  provider: OpenIdProvider;
  settings: AccountLinkingSettings;
  clock: () => Date;
  log: { warn(obj: object, msg: string): void };
}

/** The provider's tokens as sealed in a row: what refresh and revocation need. */
export interface LinkedTokens {
  access_token: string;
  refresh_token?: string;
}

/**
 * What sealed tokens are bound to (GCM's additional data): the row's tenant and user, so that a row's
 * value copied to another user's row does not open there.
 */
export function tokensContext(owner: Pick<Identity, 'tenantId' | 'userId'>): string {
  return `linked-tokens\0${owner.tenantId}\0${owner.userId}`;
}

/** A sign-in's PKCE verifier, bound to its user as the tokens are. */
export function pendingContext(owner: Pick<Identity, 'tenantId' | 'userId'>): string {
  return `pending-link\0${owner.tenantId}\0${owner.userId}`;
}

/**
 * Whether the caller is a person who can sign in: a JWT's user, or the end user an API key acts for.
 * An API key acting as itself (`api-key:<key id>`) is a bot's own memory, and has no account to link.
 */
export function isPersonalIdentity(identity: Pick<Identity, 'userId' | 'apiKeyId'>): boolean {
  return !(identity.apiKeyId && identity.userId === keyPrincipal(identity.apiKeyId));
}
