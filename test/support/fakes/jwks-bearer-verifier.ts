import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { createVerifier } from 'fast-jwt';

/**
 * How Denodo accepts an OAuth Bearer token from its identity provider, for the SDK stand-in
 * (test/support/fakes/denodo-sdk-stand-in.ts `verifyBearer`): a JWT access token signed by a key of
 * the provider's JWKS (its discovery document's `jwks_uri`), issued by that provider, for Denodo's
 * audience, not expired; the VDP user is a claim of it (Denodo's OAuth settings name which; the
 * SDK's own middleware reads `preferred_username`, then `sub`). Anything else: no user (401).
 */
export function jwksBearerVerifier(options: {
  issuer: string;
  audience: string;
  userClaim?: string;
}): (token: string) => Promise<string | undefined> {
  let keys: Promise<Map<string, string>> | undefined;
  const jwks = () =>
    (keys ??= (async () => {
      const discovery = (await (await fetch(`${options.issuer}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
      const { keys: list } = (await (await fetch(discovery.jwks_uri)).json()) as { keys: (JsonWebKey & { kid: string })[] };
      return new Map(
        list.map((jwk) => [jwk.kid, createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString()]),
      );
    })());
  const verify = createVerifier({
    key: async (decoded: { header: { kid?: string } }) => {
      const key = (await jwks()).get(decoded.header.kid ?? '');
      if (!key) throw new Error('unknown key');
      return key;
    },
    algorithms: ['RS256', 'PS256', 'ES256'],
    allowedIss: options.issuer,
    allowedAud: options.audience,
    requiredClaims: ['exp', 'iss', 'aud'],
  });
  return async (token) => {
    try {
      const claims = (await verify(token)) as Record<string, unknown>;
      const user = claims[options.userClaim ?? 'preferred_username'] ?? claims.sub;
      return typeof user === 'string' ? user : undefined;
    } catch {
      return undefined;
    }
  };
}
