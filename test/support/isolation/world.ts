import { randomBytes } from 'node:crypto';

/**
 * Who exists in an isolation property run, and who owns every id and text the service hands out.
 * Every token is random and carries a prefix that no other kind of token can contain, so a scan of
 * any response for `mk_…`, `usr_…`, `tnt_…` and UUIDs finds exactly the planted values.
 */

export interface Principal {
  index: number;
  /** `${tenantId}/${userId}`: the unit of isolation. */
  key: string;
  /** `default` when the token carries no tenant claim. */
  tenantId: string;
  userId: string;
  admin: boolean;
  /** Planted in every text this principal stores. */
  marker: string;
  token: string;
  /**
   * An API key of the principal's tenant acting for users of the namespace `bot:`, for the principals
   * that use one (KEY_USERS): every request of theirs goes through it with X-Memory-User `actAs`, and
   * their user id is the one the service stores, `key-user:bot:usr_…`, which no JWT can carry.
   */
  apiKey?: string;
  actAs?: string;
}

export interface GdprRequestRecord {
  tenantId: string;
  actorUserId: string;
  subjectUserId: string;
  subjectKey: string;
  action: 'export' | 'erase';
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export function randomTag(prefix: 'mk' | 'usr' | 'tnt'): string {
  return `${prefix}_${Array.from(randomBytes(10), (b) => ALPHABET[b % ALPHABET.length]).join('')}`;
}

const MARKER = /mk_[a-z0-9]{10}/g;
const USER_ID = /usr_[a-z0-9]{10}/g;
const TENANT_ID = /tnt_[a-z0-9]{10}/g;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Seven principals per run: two tenants with a plain user, a user id shared across tenants and an
 * admin each, and one user whose token has no tenant claim (tenant `default`) with the shared id too.
 * The shared id is what a missing tenant filter would confuse; the second admin is a foreign admin.
 */
const LAYOUT: { tenant: 0 | 1 | 'default'; shared: boolean; admin: boolean }[] = [
  { tenant: 0, shared: true, admin: false },
  { tenant: 0, shared: false, admin: false },
  { tenant: 0, shared: false, admin: true },
  { tenant: 1, shared: true, admin: false },
  { tenant: 1, shared: false, admin: false },
  { tenant: 1, shared: false, admin: true },
  { tenant: 'default', shared: true, admin: false },
];
export const PRINCIPALS_PER_RUN = LAYOUT.length;
/**
 * A plain user of each tenant, and the shared user id of the second (the id a missing tenant filter
 * confuses), acting through a key: the JWT users of the same tag (P0, P6) must stay strangers to them.
 */
export const KEY_USERS = [1, 3, 4];
export const KEY_NAMESPACE = 'bot:';

/** The `usr_…` tag in a user id, whether a JWT's subject or a key-acted user's stored id. */
function tagOf(userId: string): string | undefined {
  return userId.match(USER_ID)?.[0];
}
export const ADMIN_INDEXES = LAYOUT.flatMap((p, i) => (p.admin ? [i] : []));

/** The principals of one run, and the owner of every id and text handed out to them so far. */
export class Registry {
  readonly sessions = new Map<string, string>();
  readonly requests = new Map<string, GdprRequestRecord>();
  /** Marker → the principal whose texts carry it. */
  readonly markers = new Map<string, Principal>();
  /** User ids that belong to one principal only (the shared id is told apart by tenant and marker). */
  readonly uniqueUserIds = new Set<string>();
  readonly tenants = new Set<string>();

  createPrincipals(sign: (sub: string, claims: Record<string, unknown>) => string): Principal[] {
    const tenants = [randomTag('tnt'), randomTag('tnt')];
    const shared = randomTag('usr');
    for (const t of tenants) this.tenants.add(t);
    return LAYOUT.map((spec, index) => {
      const tenantId = spec.tenant === 'default' ? 'default' : tenants[spec.tenant]!;
      const tag = spec.shared ? shared : randomTag('usr');
      if (!spec.shared) this.uniqueUserIds.add(tag);
      const actAs = KEY_USERS.includes(index) ? `${KEY_NAMESPACE}${tag}` : undefined;
      const userId = actAs ? `key-user:${actAs}` : tag;
      const claims: Record<string, unknown> = {
        ...(spec.tenant === 'default' ? {} : { tenant: tenantId }),
        ...(spec.admin ? { roles: ['memory-admin'] } : {}),
      };
      const principal = {
        index,
        key: `${tenantId}/${userId}`,
        tenantId,
        userId,
        admin: spec.admin,
        marker: randomTag('mk'),
        token: sign(userId, claims),
        ...(actAs ? { actAs } : {}),
      };
      this.markers.set(principal.marker, principal);
      return principal;
    });
  }

  /** docs/design.md §7: the subject, the requester and admins of the tenant see a GDPR request. */
  canSee(viewer: Principal, request: GdprRequestRecord): boolean {
    return (
      request.tenantId === viewer.tenantId &&
      (request.subjectUserId === viewer.userId || request.actorUserId === viewer.userId || viewer.admin)
    );
  }

  /**
   * What in `text` (a whole response: status, headers and body) belongs to someone `viewer` may not
   * see. `owners` are the principals whose content the viewer may legitimately receive; what the
   * viewer sent (`sent`: the request's path and body) may be echoed back, e.g. in a 404's detail.
   */
  leaksIn(text: string, viewer: Principal, owners: ReadonlySet<string>, sent = ''): string[] {
    const found = new Set<string>();
    const echoed = (token: string) => sent.includes(token);
    for (const marker of text.match(MARKER) ?? []) {
      if (echoed(marker)) continue;
      const owner = this.markers.get(marker)?.key;
      if (owner && !owners.has(owner)) found.add(`text of ${owner} (marker ${marker})`);
    }
    for (const uuid of text.match(UUID) ?? []) {
      const id = uuid.toLowerCase();
      if (echoed(id)) continue;
      const sessionOwner = this.sessions.get(id);
      if (sessionOwner && !owners.has(sessionOwner)) found.add(`session id ${id} of ${sessionOwner}`);
      const request = this.requests.get(id);
      if (request && !this.canSee(viewer, request)) found.add(`GDPR request id ${id} of ${request.tenantId}/${request.subjectUserId}`);
    }
    for (const userId of text.match(USER_ID) ?? []) {
      if (echoed(userId)) continue;
      if (this.uniqueUserIds.has(userId) && userId !== tagOf(viewer.userId) && !this.isParticipantVisibleTo(viewer, userId)) {
        found.add(`user id ${userId}`);
      }
    }
    for (const tenantId of text.match(TENANT_ID) ?? []) {
      if (echoed(tenantId)) continue;
      if (this.tenants.has(tenantId) && tenantId !== viewer.tenantId) found.add(`tenant id ${tenantId}`);
    }
    return [...found];
  }

  /** A user id the viewer may see because it names the actor or subject of a request the viewer sees. */
  private isParticipantVisibleTo(viewer: Principal, userId: string): boolean {
    for (const request of this.requests.values()) {
      if ((tagOf(request.actorUserId) === userId || tagOf(request.subjectUserId) === userId) && this.canSee(viewer, request)) return true;
    }
    return false;
  }
}
