import { setTimeout as sleep } from 'node:timers/promises';
import {
  claimRefresh,
  expireLinkedTokens,
  findLinkedIdentity,
  type LinkedIdentityRow,
  releaseRefresh,
  storeRefreshedTokens,
} from '../../db/repositories/linked-identities.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import { GrantRefusedError } from '../../providers/identity/openid-provider.js';
import { type LinkedTokens, type LinkingDeps, tokensContext } from './linking-deps.js';
import { expiriesOf, sealedTokensOf } from './sign-in.js';
import { seal, UnsealError, unseal } from './token-sealing.js';

/** The header the answerer gets for a linked user, and the version of the tokens it came from. */
export interface LinkedAuthorization {
  authorization: string;
  tokenVersion: string;
}

/** An access token this close to its expiry is refreshed first: it must outlive the call that carries it. */
const REFRESH_MARGIN_MS = 60_000;
/** How long one process may hold a user's refresh before another may take it over. */
const REFRESH_LEASE_MS = 15_000;
/** How often a request waiting for another process's refresh reads the row again. */
const REFRESH_WAIT_POLL_MS = 200;

type Owner = Pick<Identity, 'tenantId' | 'userId'>;

/**
 * The user's access token as `Bearer`, refreshed when it is about to expire (docs/account-linking.md).
 * One refresh at a time per user: within this process the callers share it; across processes a lease
 * in the row lets one refresh while the others wait for its tokens (a rotated refresh token used twice
 * makes providers such as oidc-provider and Okta revoke the whole grant).
 */
export function createLinkedCredentials(deps: LinkingDeps) {
  const refreshing = new Map<string, Promise<void>>();

  async function authorizationFor(owner: Owner): Promise<LinkedAuthorization> {
    const scope = deps.db.asUser(owner);
    // Real time, not the service's clock: how long this request waits for another process's refresh.
    const waitUntil = performance.now() + REFRESH_LEASE_MS;
    let refreshed = false;
    for (;;) {
      const { row, tokens } = usableTokens(await findLinkedIdentity(scope, owner.tenantId, owner.userId), owner);
      const current = { authorization: `Bearer ${tokens.access_token}`, tokenVersion: row.token_version };
      const now = deps.clock();
      // Tokens this call refreshed serve it, even when the provider's lifetime is shorter than the margin.
      if (refreshed || !needsRefresh(row, now)) return current;
      if (!tokens.refresh_token) {
        await expireLinkedTokens(scope, owner.tenantId, owner.userId, row.token_version, now);
        throw linkExpired('the access token of the linked account has expired and the identity provider gave no refresh token');
      }
      const key = `${owner.tenantId}\0${owner.userId}`;
      let shared = refreshing.get(key);
      if (!shared) {
        shared = refresh(owner, row, tokens).finally(() => refreshing.delete(key));
        refreshing.set(key, shared);
      }
      const outcome = await shared.then(
        () => 'refreshed' as const,
        (err: unknown) => {
          if (err instanceof LeaseHeldElsewhere) return 'elsewhere' as const;
          // The provider is down but the token has not expired yet: it still serves this call.
          if (isProviderFailure(err) && row.access_expires_at!.getTime() > deps.clock().getTime()) return 'unexpired' as const;
          throw err;
        },
      );
      if (outcome === 'unexpired') return current;
      refreshed = outcome === 'refreshed';
      if (outcome === 'elsewhere') {
        // Another process refreshes: its tokens are read once stored, or its lease lapses.
        if (performance.now() > waitUntil) {
          throw new AppError('identity-provider-failed', 'the linked account is being refreshed by another request; ask again');
        }
        await sleep(REFRESH_WAIT_POLL_MS);
      }
    }
  }

  /** The tokens of `row` refreshed and stored, or the link expired when the provider refuses. */
  async function refresh(owner: Owner, row: LinkedIdentityRow, tokens: LinkedTokens): Promise<void> {
    const scope = deps.db.asUser(owner);
    const now = deps.clock();
    const version = row.token_version;
    if (!(await claimRefresh(scope, owner.tenantId, owner.userId, version, now, new Date(now.getTime() + REFRESH_LEASE_MS)))) {
      throw new LeaseHeldElsewhere();
    }
    let fresh: Awaited<ReturnType<typeof deps.provider.refresh>>;
    try {
      fresh = await deps.provider.refresh(tokens.refresh_token!);
    } catch (err) {
      if (err instanceof GrantRefusedError) {
        await expireLinkedTokens(scope, owner.tenantId, owner.userId, version, deps.clock());
        throw linkExpired('the identity provider refused to refresh the linked account (revoked or expired)');
      }
      await releaseRefresh(scope, owner.tenantId, owner.userId, version);
      throw err;
    }
    const at = deps.clock();
    await storeRefreshedTokens(
      scope,
      owner.tenantId,
      owner.userId,
      version,
      {
        // Written under the current key: a refresh also moves the row off a key being retired.
        keyId: deps.settings.keys[0]!.id,
        sealed: seal(deps.settings.keys, sealedTokensOf(fresh, tokens), tokensContext(owner)),
        ...expiriesOf(fresh, at, tokens),
      },
      at,
    );
  }

  /** The row's tokens for its user, or the problem the bot turns into "sign in". */
  function usableTokens(row: LinkedIdentityRow | undefined, owner: Owner): { row: LinkedIdentityRow; tokens: LinkedTokens } {
    if (!row?.sealed_tokens) {
      if (row?.expired_at) throw linkExpired('the linked account was refused');
      throw new AppError(
        'account-not-linked',
        'no account of the identity provider is linked to this user: sign in through POST /me/account-link (a bot sends the link it returns), or send X-Upstream-Authorization',
      );
    }
    try {
      return { row, tokens: unseal<LinkedTokens>(deps.settings.keys, row.sealed_tokens, tokensContext(owner)) };
    } catch (err) {
      if (!(err instanceof UnsealError)) throw err;
      // Its key was removed from ACCOUNT_LINK_KEYS before the row moved to a newer one.
      deps.log.warn({ keyId: row.key_id }, 'a linked account could not be opened with the configured keys; the user must sign in again');
      throw linkExpired('the linked account must sign in again');
    }
  }

  function needsRefresh(row: LinkedIdentityRow, now: Date): boolean {
    return row.access_expires_at !== null && row.access_expires_at.getTime() - REFRESH_MARGIN_MS <= now.getTime();
  }

  /**
   * The answerer refused the token `authorizationFor` gave (revoked at the provider, or taken from
   * the user's permissions): it is deleted, and the user must sign in again.
   */
  async function refusedUpstream(owner: Owner, used: LinkedAuthorization, detail: string): Promise<AppError> {
    await expireLinkedTokens(deps.db.asUser(owner), owner.tenantId, owner.userId, used.tokenVersion, deps.clock());
    return linkExpired(`the answering backend refused the linked account's token${detail ? `: ${detail}` : ''}`);
  }

  return { authorizationFor, refusedUpstream };
}

function isProviderFailure(err: unknown): boolean {
  return err instanceof AppError && err.code === 'identity-provider-failed';
}

function linkExpired(why: string): AppError {
  return new AppError('account-link-expired', `${why}: sign in again through POST /me/account-link`);
}

/** Another process holds this user's refresh. */
class LeaseHeldElsewhere extends Error {
  override name = 'LeaseHeldElsewhere';
}
