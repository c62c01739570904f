import { createHash } from 'node:crypto';

/** Who is calling, taken only from a verified JWT or API key. */
export interface Identity {
  tenantId: string;
  userId: string;
  roles: string[];
  /** The databases the token allows, when the token carries such a claim. */
  databases?: string[];
  /** The API key the call came with (docs/api-keys.md), when it did not come with a JWT. */
  apiKeyId?: string;
}

/** Which turns a request may draw on: those whose databases lie within these bounds. */
export interface DatabaseScope {
  /** The request's `vdp_database_names`, when it names any. */
  requested?: string[];
  /** The JWT's databases claim, when configured and present. */
  allowed?: string[];
  /** The request's `vdp_tag_names`, when it names any: bounds memory as `requested` does, over the turns' tags. */
  tags?: string[];
}

/** A stable pseudonym of a user: 16 hex characters of sha256(tenant, user). Logs name users by it. */
export function userPseudonym(identity: Pick<Identity, 'tenantId' | 'userId'>): string {
  return createHash('sha256').update(`${identity.tenantId}\0${identity.userId}`).digest('hex').slice(0, 16);
}
