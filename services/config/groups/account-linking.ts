import Type, { type Static } from 'typebox';
import { parseSealingKeys, readSealingKeysFile, type SealingKey } from '../account-link-keys.js';
import { ConfigError } from '../config-error.js';
import { DURATION_PATTERN, parseDurationMs } from '../duration.js';

/** Account linking: a bot user's sign-in with the OpenID provider Denodo trusts. */
export const AccountLinkingSchema = Type.Object({
  // Account linking (docs/account-linking.md): a bot's user signs in once with the OpenID provider that
  // Denodo trusts, and memorychat sends that user's access token upstream when an API key acts for them.
  // On with ACCOUNT_LINK_ISSUER; the client is registered there with ACCOUNT_LINK_REDIRECT_URL.
  ACCOUNT_LINK_ISSUER: Type.Optional(Type.String({ pattern: '^https?://' })),
  ACCOUNT_LINK_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  // Unset: a public client (PKCE alone); set: client_secret_basic.
  ACCOUNT_LINK_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  // This service's /account-link/callback as the provider redirects browsers to it.
  ACCOUNT_LINK_REDIRECT_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  // Space-separated; `openid` names the subject, `offline_access` asks for a refresh token.
  ACCOUNT_LINK_SCOPES: Type.String({ minLength: 1, default: 'openid offline_access' }),
  // The resource indicator (RFC 8707) of Denodo's tokens, when the provider issues them per audience.
  ACCOUNT_LINK_RESOURCE: Type.Optional(Type.String({ minLength: 1 })),
  // The keys that seal the tokens at rest: `id:base64` (32 bytes), the first seals, all open; or a file of them.
  ACCOUNT_LINK_KEYS: Type.Optional(Type.String({ minLength: 1 })),
  ACCOUNT_LINK_KEYS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  // How long a sign-in link may be used.
  ACCOUNT_LINK_TTL: Type.String({ pattern: DURATION_PATTERN, default: '10m' }),
});

export type AccountLinkingVariables = Static<typeof AccountLinkingSchema>;

/** The ACCOUNT_LINK_* settings, checked together. */
export interface AccountLinkingSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  redirectUrl: string;
  scopes: string;
  resource?: string;
  /** The first seals; every one opens. */
  keys: SealingKey[];
  linkTtlMs: number;
}

/** ACCOUNT_LINK_*: on with an issuer, which then needs a client, a redirect URL and keys; off, none of them is set. */
export function deriveAccountLinking(raw: AccountLinkingVariables, isProduction: boolean): { accountLinking?: AccountLinkingSettings } {
  if (!raw.ACCOUNT_LINK_ISSUER) {
    const stray = (
      [
        'ACCOUNT_LINK_CLIENT_ID',
        'ACCOUNT_LINK_CLIENT_SECRET',
        'ACCOUNT_LINK_REDIRECT_URL',
        'ACCOUNT_LINK_RESOURCE',
        'ACCOUNT_LINK_KEYS',
        'ACCOUNT_LINK_KEYS_FILE',
      ] as const
    ).find((name) => raw[name] !== undefined);
    if (stray) throw new ConfigError(`ACCOUNT_LINK_ISSUER: required when ${stray} is set (account linking is on with an issuer)`);
    return {};
  }
  for (const name of ['ACCOUNT_LINK_CLIENT_ID', 'ACCOUNT_LINK_REDIRECT_URL'] as const) {
    if (!raw[name]) throw new ConfigError(`${name}: required when ACCOUNT_LINK_ISSUER is set`);
  }
  if (isProduction) {
    // Tokens and the authorization code travel on these: never in clear in production.
    for (const name of ['ACCOUNT_LINK_ISSUER', 'ACCOUNT_LINK_REDIRECT_URL'] as const) {
      if (!raw[name]!.startsWith('https://')) throw new ConfigError(`${name}: must be an https:// URL when NODE_ENV=production`);
    }
  }
  if (!raw.ACCOUNT_LINK_SCOPES.split(/\s+/).includes('openid')) {
    throw new ConfigError('ACCOUNT_LINK_SCOPES: must include openid (the ID token names the linked subject)');
  }
  if (Boolean(raw.ACCOUNT_LINK_KEYS) === Boolean(raw.ACCOUNT_LINK_KEYS_FILE)) {
    throw new ConfigError('ACCOUNT_LINK_KEYS or ACCOUNT_LINK_KEYS_FILE: exactly one is required when ACCOUNT_LINK_ISSUER is set');
  }
  let keys: SealingKey[];
  const source = raw.ACCOUNT_LINK_KEYS ? 'ACCOUNT_LINK_KEYS' : 'ACCOUNT_LINK_KEYS_FILE';
  try {
    keys = raw.ACCOUNT_LINK_KEYS ? parseSealingKeys(raw.ACCOUNT_LINK_KEYS) : readSealingKeysFile(raw.ACCOUNT_LINK_KEYS_FILE!);
  } catch (err) {
    throw new ConfigError(`${source}: ${(err as Error).message}`);
  }
  return {
    accountLinking: {
      issuer: raw.ACCOUNT_LINK_ISSUER,
      clientId: raw.ACCOUNT_LINK_CLIENT_ID!,
      ...(raw.ACCOUNT_LINK_CLIENT_SECRET ? { clientSecret: raw.ACCOUNT_LINK_CLIENT_SECRET } : {}),
      redirectUrl: raw.ACCOUNT_LINK_REDIRECT_URL!,
      scopes: raw.ACCOUNT_LINK_SCOPES,
      ...(raw.ACCOUNT_LINK_RESOURCE ? { resource: raw.ACCOUNT_LINK_RESOURCE } : {}),
      keys,
      linkTtlMs: parseDurationMs(raw.ACCOUNT_LINK_TTL),
    },
  };
}
