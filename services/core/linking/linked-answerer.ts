import { AppError } from '../../model/errors.js';
import type { Answerer } from '../../providers/answerers/answerer.js';
import type { AccountLinks } from './account-links.js';

/**
 * The upstream answerer with ANSWER_AUTH=forward, for linked accounts (docs/account-linking.md): a
 * question that comes without X-Upstream-Authorization goes with the asker's linked access token as
 * `Authorization: Bearer`, so the Denodo AI SDK answers with that user's own view permissions. Every
 * caller of /memoryChat's flow (the memory façade's `chat`) gets it the same way.
 * A token the answerer refuses is deleted and the problem says to sign in again.
 */
export function withLinkedAccounts(answerer: Answerer, links: Pick<AccountLinks, 'authorizationFor' | 'refusedUpstream'>): Answerer {
  return {
    kind: answerer.kind,
    ...(answerer.close ? { close: () => answerer.close!() } : {}),
    async answer(request) {
      if (request.upstreamAuthorization !== undefined || !request.identity) return answerer.answer(request);
      const linked = await links.authorizationFor(request.identity);
      if (!linked) return answerer.answer(request);
      try {
        return await answerer.answer({ ...request, upstreamAuthorization: linked.authorization });
      } catch (err) {
        if (err instanceof AppError && err.code === 'upstream-credentials-refused') {
          throw await links.refusedUpstream(request.identity, linked, upstreamMessage(err.message));
        }
        throw err;
      }
    },
  };
}

/** The SDK's own words after the forwarded-credentials sentence, which would name a header the bot never sent. */
function upstreamMessage(detail: string): string {
  const colon = detail.indexOf(': ');
  return colon < 0 ? '' : detail.slice(colon + 2);
}
