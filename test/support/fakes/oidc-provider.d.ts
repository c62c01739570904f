// The part of oidc-provider (v9, which ships no types) that the tests' identity provider uses
// (test/support/fakes/openid-provider.ts), as its README and lib/ describe it.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Interaction {
    uid: string;
    prompt: { name: string; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId: string };
    grantId?: string;
  }

  interface GrantInstance {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(indicator: string, scope: string): void;
    save(): Promise<string>;
    destroy(): Promise<void>;
  }

  interface TokenModel {
    adapter: { revokeByGrantId(grantId: string): Promise<void> };
    find(value: string): Promise<{ isExpired: boolean; consumed?: unknown } | undefined>;
  }

  class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    Grant: {
      new (properties: { accountId: string; clientId: string }): GrantInstance;
      find(id: string): Promise<GrantInstance | undefined>;
    };
    AccessToken: TokenModel;
    RefreshToken: TokenModel;
    AuthorizationCode: TokenModel;
  }

  export const errors: { InvalidTarget: new (description?: string) => Error };
  export default Provider;
}
