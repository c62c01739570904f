import * as oidc from 'openid-client';
import type { AccountLinkingSettings } from '../../config/config.js';
import { AppError } from '../../model/errors.js';

/** What a token response gave: the tokens, how long they last, and whom the ID token names. */
export interface ProviderTokens {
  accessToken: string;
  refreshToken?: string;
  /** `expires_in`, seconds. */
  expiresInS?: number;
  /** `refresh_expires_in` (Keycloak and others), seconds. */
  refreshExpiresInS?: number;
  /** The ID token's `sub`, `iss` and `preferred_username`, when the response carried one. */
  subject?: string;
  issuer?: string;
  username?: string;
}

/** The provider refused a grant (`invalid_grant`): the code was used or expired, or the refresh token is revoked or expired. */
export class GrantRefusedError extends Error {
  override name = 'GrantRefusedError';
}

/**
 * The OpenID provider accounts are linked with (ACCOUNT_LINK_ISSUER), through openid-client: the
 * authorization-code flow with PKCE (S256), refresh, and revocation (RFC 7009). The provider's
 * metadata is discovered at the first use and kept; a failed discovery is tried again at the next.
 */
export interface OpenIdProvider {
  authorizationUrl(checks: { state: string; codeChallenge: string }): Promise<URL>;
  /** `callbackUrl`: the redirect as the browser followed it, with `code`, `state` (and `iss`). */
  exchangeCode(callbackUrl: URL, checks: { state: string; codeVerifier: string }): Promise<ProviderTokens>;
  refresh(refreshToken: string): Promise<ProviderTokens>;
  /** Revokes a token where the provider offers revocation; false when it does not. */
  revoke(token: string, hint: 'refresh_token' | 'access_token'): Promise<boolean>;
}

/** Seconds openid-client waits for each call to the provider. */
const PROVIDER_TIMEOUT_S = 15;

export function createOpenIdProvider(settings: AccountLinkingSettings): OpenIdProvider {
  let discovered: Promise<oidc.Configuration> | undefined;
  const configuration = () => {
    discovered ??= discover(settings).catch((err: unknown) => {
      discovered = undefined;
      throw providerFailure('the identity provider could not be discovered', err);
    });
    return discovered;
  };
  const resource: Record<string, string> = settings.resource ? { resource: settings.resource } : {};

  return {
    async authorizationUrl({ state, codeChallenge }) {
      const parameters: Record<string, string> = {
        redirect_uri: settings.redirectUrl,
        scope: settings.scopes,
        state,
        code_challenge: codeChallenge,
        code_challenge_method: 'S256',
        // offline_access is granted only with consent (OpenID Connect Core §11).
        ...(settings.scopes.split(/\s+/).includes('offline_access') ? { prompt: 'consent' } : {}),
        ...resource,
      };
      return oidc.buildAuthorizationUrl(await configuration(), parameters);
    },
    async exchangeCode(callbackUrl, { state, codeVerifier }) {
      const config = await configuration();
      try {
        const tokens = await oidc.authorizationCodeGrant(
          config,
          callbackUrl,
          { pkceCodeVerifier: codeVerifier, expectedState: state, idTokenExpected: true },
          resource,
        );
        return tokensOf(tokens);
      } catch (err) {
        if (err instanceof oidc.AuthorizationResponseError) {
          // The provider sent the browser back with an error: the user declined, or the request was refused.
          throw new AppError(
            'account-link-invalid',
            `the identity provider answered ${err.error}${err.error_description ? `: ${err.error_description}` : ''}`,
          );
        }
        if (isInvalidGrant(err)) throw new AppError('account-link-invalid', 'the sign-in has expired or was already used: start it again');
        throw providerFailure('the identity provider did not complete the sign-in', err);
      }
    },
    async refresh(refreshToken) {
      const config = await configuration();
      try {
        return tokensOf(await oidc.refreshTokenGrant(config, refreshToken, resource));
      } catch (err) {
        if (isInvalidGrant(err)) throw new GrantRefusedError('the identity provider refused the refresh token');
        throw providerFailure('the identity provider did not refresh the tokens', err);
      }
    },
    async revoke(token, hint) {
      const config = await configuration();
      if (!config.serverMetadata().revocation_endpoint) return false;
      try {
        await oidc.tokenRevocation(config, token, { token_type_hint: hint });
        return true;
      } catch (err) {
        throw providerFailure('the identity provider did not revoke the token', err);
      }
    },
  };
}

async function discover(settings: AccountLinkingSettings): Promise<oidc.Configuration> {
  const issuer = new URL(settings.issuer);
  return oidc.discovery(issuer, settings.clientId, settings.clientSecret, settings.clientSecret ? undefined : oidc.None(), {
    // http:// only outside production (config.ts refuses it there): a provider on this machine in tests.
    ...(issuer.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
    timeout: PROVIDER_TIMEOUT_S,
  });
}

function tokensOf(response: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers): ProviderTokens {
  const claims = response.claims();
  const refreshExpiresIn = (response as { refresh_expires_in?: unknown }).refresh_expires_in;
  return {
    accessToken: response.access_token,
    ...(response.refresh_token ? { refreshToken: response.refresh_token } : {}),
    ...(typeof response.expires_in === 'number' ? { expiresInS: response.expires_in } : {}),
    ...(typeof refreshExpiresIn === 'number' && refreshExpiresIn > 0 ? { refreshExpiresInS: refreshExpiresIn } : {}),
    ...(claims
      ? {
          subject: claims.sub,
          issuer: claims.iss,
          ...(typeof claims.preferred_username === 'string' ? { username: claims.preferred_username } : {}),
        }
      : {}),
  };
}

function isInvalidGrant(err: unknown): boolean {
  return err instanceof oidc.ResponseBodyError && err.error === 'invalid_grant';
}

/** Anything else the provider did (unreachable, 5xx, a reply openid-client refuses): 502, its reason logged. */
function providerFailure(what: string, err: unknown): AppError {
  const reason = err instanceof oidc.ResponseBodyError ? `: ${err.error}` : '';
  return new AppError('identity-provider-failed', `${what}${reason}`, { cause: err });
}
