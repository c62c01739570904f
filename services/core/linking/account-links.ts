import { deleteLinkedIdentity, findLinkedIdentity } from '../../db/repositories/linked-identities.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import { createLinkedCredentials } from './linked-credentials.js';
import { isPersonalIdentity, type LinkedTokens, type LinkingDeps, tokensContext } from './linking-deps.js';
import { finishSignIn, startSignIn } from './sign-in.js';
import { UnsealError, unseal } from './token-sealing.js';

/**
 * Account linking (docs/account-linking.md): a bot's user signs in once with the OpenID provider
 * Denodo trusts; memorychat keeps their tokens sealed, refreshes them, and gives the answerer the
 * user's access token as `Bearer` when no X-Upstream-Authorization came with the question.
 */
export function createAccountLinks(deps: LinkingDeps) {
  const credentials = createLinkedCredentials(deps);
  const personal = (identity: Identity) => {
    if (!isPersonalIdentity(identity)) {
      throw new AppError('forbidden', 'an API key acting as itself has no account to link: name the user in X-Memory-User');
    }
    return identity;
  };

  return {
    start: (identity: Identity) => startSignIn(deps, personal(identity)),
    /** The callback's query string, as the provider sent the browser back with it to ACCOUNT_LINK_REDIRECT_URL. */
    finish(callbackQuery: string) {
      const callbackUrl = new URL(deps.settings.redirectUrl);
      callbackUrl.search = callbackQuery;
      return finishSignIn(deps, callbackUrl);
    },

    /** GET /me/account-link: whether the caller is linked, and to whom. */
    async status(identity: Identity) {
      const row = await findLinkedIdentity(deps.db.asUser(personal(identity)), identity.tenantId, identity.userId);
      const status = row?.sealed_tokens ? 'linked' : row?.expired_at ? 'expired' : 'not-linked';
      return {
        status,
        issuer: status === 'not-linked' ? null : (row?.issuer ?? null),
        subject: status === 'not-linked' ? null : (row?.subject ?? null),
        username: status === 'not-linked' ? null : (row?.username ?? null),
        linked_at: status === 'not-linked' ? null : (row?.linked_at?.toISOString() ?? null),
      } as const;
    },

    /**
     * DELETE /me/account-link: the tokens are deleted at once, with any sign-in in progress, then
     * revoked at the provider where it offers revocation (the refresh token: providers revoke the
     * grant with it). A failed revocation leaves the deletion done and says so.
     */
    async unlink(identity: Identity) {
      const owner = personal(identity);
      const { found, tokens } = await deleteLinkedIdentity(deps.db.asUser(owner), owner.tenantId, owner.userId);
      if (!found) throw new AppError('not-found', 'no account is linked to this user');
      return { unlinked: true as const, revoked_at_provider: tokens ? await revoke(tokens.sealed, owner) : false };
    },

    /**
     * The header for the answerer, for a question asked without X-Upstream-Authorization by a person
     * (a JWT's user, or the user an API key acts for); undefined for an API key acting as itself.
     */
    authorizationFor: (identity: Pick<Identity, 'tenantId' | 'userId' | 'apiKeyId'>) =>
      isPersonalIdentity(identity) ? credentials.authorizationFor(identity) : Promise.resolve(undefined),
    refusedUpstream: credentials.refusedUpstream,
  };

  async function revoke(sealed: Buffer, owner: Identity): Promise<boolean> {
    try {
      const tokens = unseal<LinkedTokens>(deps.settings.keys, sealed, tokensContext(owner));
      return await deps.provider.revoke(
        tokens.refresh_token ?? tokens.access_token,
        tokens.refresh_token ? 'refresh_token' : 'access_token',
      );
    } catch (err) {
      if (!(err instanceof UnsealError || err instanceof AppError)) throw err;
      deps.log.warn({ err }, 'an unlinked account was deleted but its tokens could not be revoked at the identity provider');
      return false;
    }
  }
}

export type AccountLinks = ReturnType<typeof createAccountLinks>;
