import type { Identity } from '../../model/identity.js';
import type { ViewCaller, ViewPermissions } from '../../providers/answerers/view-permissions.js';
import { tablesReadOf } from '../search-terms/tables-read.js';

/**
 * Memory only from views the user may read today (docs/design.md §4): every remembered item names the
 * views it used (tablesReadOf), and an item goes upstream, into `use_views` or into a search result only
 * when all of them are readable now. An item that used no view has nothing to check.
 */
export interface ViewGate {
  /** `checked`: the upstream said; `unavailable`: it could not, and memory keeps today's bounds only. */
  status: 'checked' | 'unavailable';
  readable(views: readonly string[]): boolean;
}

/** A remembered turn or verified pair: the views it used are those of its `tables_used` its SQL read (tables-read.ts). */
type RememberedItem = Parameters<typeof tablesReadOf>[0];

/** Whose permissions a request asks about: its identity and the X-Upstream-Authorization it sent. */
export function viewCallerOf(
  identity: Pick<Identity, 'tenantId' | 'userId' | 'apiKeyId'>,
  upstreamAuthorization: string | undefined,
): ViewCaller {
  return {
    tenantId: identity.tenantId,
    userId: identity.userId,
    ...(identity.apiKeyId ? { apiKeyId: identity.apiKeyId } : {}),
    ...(upstreamAuthorization !== undefined ? { upstreamAuthorization } : {}),
  };
}

/** The gate for one request, asked once for every view its candidate items use; undefined without an upstream SDK. */
export async function viewGateFor(
  permissions: ViewPermissions | undefined,
  caller: ViewCaller,
  items: readonly RememberedItem[],
): Promise<ViewGate | undefined> {
  if (!permissions) return undefined;
  const named = [...new Set(items.flatMap(tablesReadOf).map(viewName))];
  const answer = named.length ? await permissions.readable(caller, named) : { status: 'checked' as const, readable: new Set<string>() };
  if (answer.status === 'unavailable') return { status: 'unavailable', readable: () => true };
  return { status: 'checked', readable: (used) => used.every((view) => answer.readable.has(viewName(view))) };
}

/** The items whose views (tablesReadOf) are all readable, in their order, and how many were left out. */
export function keepReadable<T extends RememberedItem>(items: readonly T[], gate: ViewGate | undefined): { kept: T[]; leftOut: number } {
  if (!gate) return { kept: [...items], leftOut: 0 };
  const kept = items.filter((item) => gate.readable(tablesReadOf(item)));
  return { kept, leftOut: items.length - kept.length };
}

/** What a reply says of the check: whether today's permissions were asked, and how many items they left out. */
export function viewPermissionsOutcome(gate: ViewGate | undefined, leftOut: number) {
  return gate ? { view_permissions: gate.status, left_out_unreadable: leftOut } : {};
}

/** `"db"."view"` and `db.view` are one view. */
function viewName(view: string): string {
  return view.replaceAll('"', '').trim();
}
