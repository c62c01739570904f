import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { userIdAsNamed } from '../../core/api-keys/user-namespace.js';
import type { AccountLinks } from '../../core/linking/account-links.js';
import { AppError } from '../../model/errors.js';
import { AccountLinkCallbackQuery, AccountLinkStart, AccountLinkStatus, AccountUnlinked } from '../schemas/account-link.js';
import { problemResponses } from '../schemas/problem.js';

const security = [{ bearerAuth: [] }];
const tags = ['account-link'];

/**
 * Account linking (docs/account-linking.md): a user's sign-in with the OpenID provider Denodo trusts,
 * started by a bot acting for them, completed in their browser at the callback.
 */
const accountLinkRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const links = (): AccountLinks => {
    if (!app.accountLinks) {
      throw new AppError('account-linking-not-configured', 'account linking is off: set ACCOUNT_LINK_ISSUER (docs/account-linking.md)');
    }
    return app.accountLinks;
  };

  app.post(
    '/me/account-link',
    {
      schema: {
        tags,
        operationId: 'startAccountLink',
        summary: 'A sign-in link to link my account of the identity provider',
        description:
          "Returns the identity provider's authorization URL (OAuth 2.0 authorization code with PKCE) for the caller. " +
          'A bot acting for a user sends it to them; once they sign in, questions they ask through the bot without ' +
          'X-Upstream-Authorization go to the answering backend with their own access token. A new link replaces the previous one.',
        security,
        response: { 201: AccountLinkStart, ...problemResponses(401, 403, 502, 503) },
      },
    },
    async (request, reply) => reply.status(201).send(await links().start(request.identity)),
  );

  app.get(
    '/me/account-link',
    {
      schema: {
        tags,
        operationId: 'getAccountLink',
        summary: 'Whether my account of the identity provider is linked',
        security,
        response: { 200: AccountLinkStatus, ...problemResponses(401, 403, 503) },
      },
    },
    async (request) => links().status(request.identity),
  );

  app.delete(
    '/me/account-link',
    {
      schema: {
        tags,
        operationId: 'unlinkAccount',
        summary: 'Unlink my account of the identity provider',
        description: 'Deletes the linked tokens at once, then revokes them at the identity provider where it offers revocation.',
        security,
        response: { 200: AccountUnlinked, ...problemResponses(401, 403, 404, 503) },
      },
    },
    async (request) => links().unlink(request.identity),
  );

  app.get(
    '/account-link/callback',
    {
      config: { public: true },
      schema: {
        tags,
        operationId: 'finishAccountLink',
        summary: 'Where the identity provider sends the browser back (ACCOUNT_LINK_REDIRECT_URL)',
        description:
          'Completes a sign-in started by POST /me/account-link: the state names the user, the code is exchanged with its PKCE ' +
          'verifier, and the tokens are stored sealed. A browser gets a page saying who is linked to whom; other clients JSON.',
        security: [],
        querystring: AccountLinkCallbackQuery,
        response: {
          200: {
            description: 'Linked',
            content: {
              'text/html': { schema: Type.String() },
              'application/json': {
                schema: Type.Object({ user_id: Type.String(), subject: Type.String(), username: Type.Union([Type.String(), Type.Null()]) }),
              },
            },
          },
          ...problemResponses(400, 502, 503),
        },
      },
    },
    async (request, reply) => {
      try {
        const linked = await links().finish(request.url.split('?')[1] ?? '');
        if (!wantsPage(request)) return { user_id: linked.userId, subject: linked.subject, username: linked.username };
        return page(reply, 200, 'Account linked', [
          `Your account ${linked.username ?? linked.subject} is now linked to ${userIdAsNamed(linked.userId)}.`,
          'You can close this window and go back to the chat.',
        ]);
      } catch (err) {
        if (!(err instanceof AppError) || !wantsPage(request)) throw err;
        return page(reply, err.status, 'The account was not linked', [err.message]);
      }
    },
  );
};

function wantsPage(request: FastifyRequest): boolean {
  return /text\/html/.test(request.headers.accept ?? '');
}

/** A plain page for the browser that signed in; every text in it is escaped, as it names the user. */
function page(reply: FastifyReply, status: number, title: string, lines: string[]) {
  const body = lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('\n');
  return reply
    .status(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(
      `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n<body><h1>${escapeHtml(title)}</h1>\n${body}\n</body></html>\n`,
    );
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export default accountLinkRoutes;
