import { AppError } from '../../model/errors.js';
import type { ViewPermissions } from '../../providers/answerers/view-permissions.js';
import type { AccountLinks } from './account-links.js';

/**
 * The view check with ANSWER_AUTH=forward, for linked accounts (docs/account-linking.md): a caller who
 * sent no X-Upstream-Authorization is asked about with their linked access token, the credentials the
 * answerer sends for them (linked-answerer.ts), so a bot user's memory keeps only the views VDP lets
 * that user read now. A caller with no usable link (none, or expired) is checked without credentials,
 * which the check reports as unavailable; the answerer's own call says what is wrong with the link.
 */
export function viewPermissionsWithLinkedAccounts(
  permissions: ViewPermissions,
  links: Pick<AccountLinks, 'authorizationFor'>,
): ViewPermissions {
  return {
    async readable(caller, views) {
      if (caller.upstreamAuthorization !== undefined) return permissions.readable(caller, views);
      const linked = await links.authorizationFor(caller).catch((err: unknown) => {
        if (err instanceof AppError) return undefined;
        throw err;
      });
      return permissions.readable(linked ? { ...caller, upstreamAuthorization: linked.authorization } : caller, views);
    },
  };
}
