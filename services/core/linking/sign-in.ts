import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { beginPendingLink, storeLinkedAccount, takePendingLink } from '../../db/repositories/linked-identities.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import type { ProviderTokens } from '../../providers/identity/openid-provider.js';
import { type LinkedTokens, type LinkingDeps, pendingContext, tokensContext } from './linking-deps.js';
import { seal, sealToText, UnsealError, unseal, unsealText } from './token-sealing.js';

/** What `state` carries through the browser and the provider, sealed: whose sign-in this is. */
interface LinkState {
  t: string;
  u: string;
  l: string;
}

const STATE_CONTEXT = 'account-link-state';

/**
 * POST /me/account-link: a sign-in link for the caller (docs/account-linking.md). The link is the
 * provider's authorization URL with PKCE (S256) and a `state` that names this user and this sign-in,
 * sealed, so the callback knows whose it is without a session and nobody can forge one for another
 * user. The PKCE verifier waits in the user's row, sealed. A new link replaces the one before; it
 * works once, within ACCOUNT_LINK_TTL.
 */
export async function startSignIn(deps: LinkingDeps, identity: Identity) {
  const now = deps.clock();
  const linkId = randomUUID();
  const verifier = randomBytes(32).toString('base64url');
  const owner = { tenantId: identity.tenantId, userId: identity.userId };
  const expiresAt = new Date(now.getTime() + deps.settings.linkTtlMs);
  const url = await deps.provider.authorizationUrl({
    state: sealToText(deps.settings.keys, { t: owner.tenantId, u: owner.userId, l: linkId } satisfies LinkState, STATE_CONTEXT),
    codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
  });
  await beginPendingLink(deps.db.asUser(owner), {
    ...owner,
    linkId,
    sealed: seal(deps.settings.keys, { v: verifier }, pendingContext(owner)),
    expiresAt,
    now,
  });
  return { authorization_url: url.href, expires_at: expiresAt.toISOString() };
}

/**
 * GET /account-link/callback: the browser back from the provider. The sign-in its `state` names is
 * taken (once), the code exchanged with its PKCE verifier, and the tokens sealed into the user's row.
 * What the page shows: who is now linked to whom.
 */
export async function finishSignIn(deps: LinkingDeps, callbackUrl: URL) {
  const stateText = callbackUrl.searchParams.get('state');
  const state = stateText ? openState(deps, stateText) : undefined;
  if (!stateText || !state)
    throw new AppError('account-link-invalid', 'this is not a sign-in link of this service: ask the bot for a new one');
  const owner = { tenantId: state.t, userId: state.u };
  const scope = deps.db.asUser(owner);
  const pending = await takePendingLink(scope, owner.tenantId, owner.userId, state.l, deps.clock());
  if (!pending) {
    throw new AppError(
      'account-link-invalid',
      'this sign-in link has expired, was replaced by a newer one or was used already: ask the bot for a new one',
    );
  }
  const { v: codeVerifier } = unseal<{ v: string }>(deps.settings.keys, pending, pendingContext(owner));
  const tokens = await deps.provider.exchangeCode(callbackUrl, { state: stateText, codeVerifier });
  if (!tokens.subject || !tokens.issuer) {
    throw new AppError('identity-provider-failed', 'the identity provider returned no ID token naming the account');
  }
  const now = deps.clock();
  const { stored } = await storeLinkedAccount(
    scope,
    owner.tenantId,
    owner.userId,
    {
      issuer: tokens.issuer,
      subject: tokens.subject,
      username: tokens.username ?? null,
      keyId: deps.settings.keys[0]!.id,
      sealed: seal(deps.settings.keys, sealedTokensOf(tokens), tokensContext(owner)),
      ...expiriesOf(tokens, now),
    },
    now,
  );
  if (!stored) {
    // Unlinked or erased while the user signed in: the new tokens are not kept, nor left valid.
    await revokeQuietly(deps, tokens);
    throw new AppError('account-link-invalid', 'the link was cancelled while you signed in: ask the bot for a new one');
  }
  return { userId: owner.userId, subject: tokens.subject, username: tokens.username ?? null };
}

/** What of a token response is sealed: the tokens alone (their expiries are columns, for retention). */
export function sealedTokensOf(tokens: ProviderTokens, previous?: LinkedTokens): LinkedTokens {
  // A provider that does not rotate refresh tokens sends none with a refresh: the one held stays valid.
  const refresh = tokens.refreshToken ?? previous?.refresh_token;
  return { access_token: tokens.accessToken, ...(refresh ? { refresh_token: refresh } : {}) };
}

/**
 * When the access token expires, and until when the link can give one: the refresh token's own
 * expiry when the provider says it, or the access token's when there is no refresh token.
 */
export function expiriesOf(tokens: ProviderTokens, now: Date, previous?: LinkedTokens) {
  const at = (seconds: number | undefined) => (seconds === undefined ? null : new Date(now.getTime() + seconds * 1000));
  const accessExpiresAt = at(tokens.expiresInS);
  const refreshable = tokens.refreshToken ?? previous?.refresh_token;
  return { accessExpiresAt, refreshExpiresAt: refreshable ? at(tokens.refreshExpiresInS) : accessExpiresAt };
}

function openState(deps: LinkingDeps, text: string): LinkState | undefined {
  try {
    const state = unsealText<LinkState>(deps.settings.keys, text, STATE_CONTEXT);
    return typeof state.t === 'string' && typeof state.u === 'string' && typeof state.l === 'string' ? state : undefined;
  } catch (err) {
    if (err instanceof UnsealError) return undefined;
    throw err;
  }
}

async function revokeQuietly(deps: LinkingDeps, tokens: ProviderTokens): Promise<void> {
  await deps.provider
    .revoke(tokens.refreshToken ?? tokens.accessToken, tokens.refreshToken ? 'refresh_token' : 'access_token')
    .catch((err: unknown) => deps.log.warn({ err }, 'revoking the tokens of a cancelled link failed'));
}
