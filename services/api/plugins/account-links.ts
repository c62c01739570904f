import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type AccountLinks, createAccountLinks } from '../../core/linking/account-links.js';
import { createOpenIdProvider } from '../../providers/identity/openid-provider.js';
import { upstreamAuthorizationOf } from '../upstream-credentials.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Account linking (docs/account-linking.md); undefined when ACCOUNT_LINK_ISSUER is not set. */
    accountLinks: AccountLinks | undefined;
  }
}

/** Decorates `accountLinks`, made from ACCOUNT_LINK_* when set. Register before the memory plugin. */
export default fp(
  async function accountLinksPlugin(app: FastifyInstance, options: { clock?: () => Date }) {
    const settings = app.config.accountLinking;
    app.decorate(
      'accountLinks',
      settings
        ? createAccountLinks({
            db: app.db,
            provider: createOpenIdProvider(settings),
            settings,
            clock: options.clock ?? (() => new Date()),
            log: app.log,
          })
        : undefined,
    );
  },
  { name: 'account-links' },
);

/**
 * X-Upstream-Authorization, or the caller's linked token when account linking is on with
 * ANSWER_AUTH=forward: for calls outside /memoryChat's answerer (`result.csv?fresh=true`).
 */
export async function upstreamAuthorizationOrLinkOf(app: FastifyInstance, request: FastifyRequest): Promise<string | undefined> {
  const sent = upstreamAuthorizationOf(request);
  if (sent !== undefined) return sent;
  if (!app.accountLinks || app.config.answerAuth !== 'forward') return undefined;
  return (await app.accountLinks.authorizationFor(request.identity))?.authorization;
}
