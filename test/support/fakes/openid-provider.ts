import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { errors } from 'oidc-provider';

/**
 * A real OpenID provider for the tests: `oidc-provider` (panva/node-oidc-provider, OpenID certified),
 * started in process, as a company's identity provider that Denodo trusts for Bearer tokens. It issues
 * JWT access tokens for one resource, Denodo's (RFC 8707 resource indicators), refresh tokens with
 * `offline_access` (rotated on every use), and offers revocation (RFC 7009) and introspection.
 * Its login and consent pages are minimal forms of our own (the library's development pages are off);
 * `signIn` plays the user's browser on them.
 */

export interface ProviderAccount {
  password: string;
  /** `preferred_username` in the ID token and the access token. */
  username: string;
}

export interface TestOpenIdProvider {
  issuer: string;
  /** The resource indicator of Denodo's tokens: their `aud`. */
  resource: string;
  clientId: string;
  clientSecret: string;
  /**
   * The user's browser: opens `authorizationUrl`, signs in on the login page, allows on the consent
   * page, and returns where the provider sends it back (the client's redirect URL with `code` and
   * `state`), without following it.
   */
  signIn(authorizationUrl: string, username: string, password: string): Promise<URL>;
  /** An administrator revokes every grant of the account (sessions ended, tokens revoked). */
  revokeGrantsOf(accountId: string): Promise<void>;
  /** Whether the provider still honours a refresh token. */
  refreshTokenIsActive(token: string): Promise<boolean>;
  close(): Promise<void>;
}

export async function startTestOpenIdProvider(options: {
  accounts: Record<string, ProviderAccount>;
  /** The client's redirect URL (memorychat's ACCOUNT_LINK_REDIRECT_URL). */
  redirectUrl: string;
  /** Seconds an access token lasts. */
  accessTokenTtlS?: number;
}): Promise<TestOpenIdProvider> {
  let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end();
  const server = createServer((req, res) => handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const resource = 'https://denodo.test.example/vdp';
  const clientId = 'memorychat';
  const clientSecret = randomBytes(24).toString('base64url');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const grantsByAccount = new Map<string, Set<string>>();

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'test-signing-key', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    // Claims of the scopes asked for go into the ID token too (not only to userinfo).
    conformIdTokenClaims: false,
    claims: { openid: ['sub'], profile: ['preferred_username'] },
    findAccount: (_ctx: unknown, accountId: string) => {
      const account = options.accounts[accountId];
      return account ? { accountId, claims: async () => ({ sub: accountId, preferred_username: account.username }) } : undefined;
    },
    // As Keycloak's and Entra's access tokens do, so that Denodo can name its user by it.
    extraTokenClaims: async (_ctx: unknown, token: { accountId?: string }) => {
      const account = token.accountId ? options.accounts[token.accountId] : undefined;
      return account ? { preferred_username: account.username } : undefined;
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      // The client revokes only tokens issued to it.
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) =>
          token.clientId === client.clientId,
      },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string | string[]) => oneOf ?? resource,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, indicator: string) => {
          if (indicator !== resource) throw new errors.InvalidTarget();
          return {
            scope: 'denodo',
            audience: resource,
            accessTokenFormat: 'jwt',
            accessTokenTTL: options.accessTokenTtlS ?? 300,
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    ttl: {
      AccessToken: options.accessTokenTtlS ?? 300,
      RefreshToken: 86_400,
      Session: 3600,
      Interaction: 600,
      Grant: 86_400,
      AuthorizationCode: 60,
      IdToken: 300,
    },
  });

  /** The login and consent pages: what a real provider shows, as plain forms. */
  async function interaction(req: IncomingMessage, res: ServerResponse, uid: string, action: string | undefined): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) return void res.writeHead(400).end('not this interaction');
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/html' });
      const form =
        details.prompt.name === 'login'
          ? `<form method="post" action="/interaction/${uid}/login" data-prompt="login"><input name="username"><input name="password" type="password"></form>`
          : `<form method="post" action="/interaction/${uid}/consent" data-prompt="consent"><button>Allow</button></form>`;
      return void res.end(`<!doctype html><html><body>${form}</body></html>`);
    }
    const body = new URLSearchParams(await readBody(req));
    if (action === 'login') {
      const accountId = body.get('username') ?? '';
      if (options.accounts[accountId]?.password !== body.get('password')) return void res.writeHead(401).end('wrong password');
      return provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    }
    const { prompt, params, session, grantId } = details;
    const grant = grantId
      ? (await provider.Grant.find(grantId))!
      : new provider.Grant({ accountId: session!.accountId, clientId: String(params.client_id) });
    const missing = prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
      grant.addResourceScope(indicator, scopes.join(' '));
    const saved = await grant.save();
    const grants = grantsByAccount.get(session!.accountId) ?? new Set<string>();
    grantsByAccount.set(session!.accountId, grants.add(saved));
    return provider.interactionFinished(req, res, { consent: { grantId: saved } }, { mergeWithLastSubmission: true });
  }

  const callback = provider.callback();
  handle = (req, res) => {
    const match = /^\/interaction\/([^/?]+)(?:\/(login|consent))?/.exec(req.url ?? '');
    if (!match) return void callback(req, res);
    interaction(req, res, match[1]!, match[2]).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  };

  return {
    issuer,
    resource,
    clientId,
    clientSecret,
    async signIn(authorizationUrl, username, password) {
      const jar = new Map<string, string>();
      let url = new URL(authorizationUrl);
      let method = 'GET';
      let body: string | undefined;
      for (let hops = 0; hops < 20; hops++) {
        const response = await fetch(url, {
          method,
          redirect: 'manual',
          headers: {
            cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '),
            ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
          },
          body,
        });
        for (const cookie of response.headers.getSetCookie()) {
          const [pair = ''] = cookie.split(';');
          const eq = pair.indexOf('=');
          jar.set(pair.slice(0, eq), pair.slice(eq + 1));
        }
        const location = response.headers.get('location');
        if (location) {
          await response.arrayBuffer();
          const next = new URL(location, url);
          if (next.origin !== issuer) return next;
          [url, method, body] = [next, 'GET', undefined];
          continue;
        }
        const page = await response.text();
        const form = /<form method="post" action="([^"]+)" data-prompt="(login|consent)"/.exec(page);
        if (!form) throw new Error(`the provider answered ${response.status} without a form: ${page.slice(0, 300)}`);
        url = new URL(form[1]!, url);
        method = 'POST';
        body = form[2] === 'login' ? new URLSearchParams({ username, password }).toString() : '';
      }
      throw new Error('the sign-in did not come back from the provider within 20 redirects');
    },
    async revokeGrantsOf(accountId) {
      for (const grantId of grantsByAccount.get(accountId) ?? []) {
        await Promise.all(
          [provider.AccessToken, provider.RefreshToken, provider.AuthorizationCode].map((model) => model.adapter.revokeByGrantId(grantId)),
        );
        await (await provider.Grant.find(grantId))?.destroy();
      }
    },
    async refreshTokenIsActive(token) {
      const found = await provider.RefreshToken.find(token);
      return !!found && !found.isExpired && !found.consumed;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}
