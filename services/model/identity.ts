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

/**
 * The longest user or tenant id, at sign-in and in an admin route's path alike, so that whoever can
 * sign in can be exported and erased. Percent-encoded (at most 9 characters each, for a character of
 * 3 UTF-8 bytes) it still fits a request line within Node's 16 KiB header limit.
 */
export const MAX_ID_CHARS = 1024;

/*
 * Control characters (C0, DEL, C1), line and paragraph separators, and default-ignorable code points:
 * zero-width space and joiners, bidi controls, the BOM, soft hyphen, variation selectors, Hangul fillers.
 * They show as nothing or reorder what is shown, so `alice\u200b` would be a second user who looks
 * like `alice` in every log, audit and admin screen.
 */
const INVISIBLE_OR_CONTROL = /[\p{Cc}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;

/**
 * The one rule for a user or tenant id, wherever one comes in (a token's claims, an admin route's
 * path): NFC-normalised, so that `é` composed and decomposed are one user; refused (the reason
 * returned) when it is blank, holds NUL (Postgres text cannot), a lone
 * UTF-16 surrogate (it would be stored as U+FFFD, merging users), or an invisible or control character,
 * or is longer than MAX_ID_CHARS.
 */
export function normaliseIdentifier(raw: string): { id: string } | { problem: string } {
  if (raw.includes('\u0000')) return { problem: 'contains a NUL character (U+0000), which cannot be stored' };
  if (/\p{Cs}/u.test(raw)) return { problem: 'contains a lone UTF-16 surrogate, which is not Unicode text' };
  const id = raw.normalize('NFC');
  const hidden = INVISIBLE_OR_CONTROL.exec(id)?.[0];
  if (hidden !== undefined) {
    const codePoint = `U+${hidden.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    return { problem: `contains an invisible or control character (${codePoint}), which would make it look like another id` };
  }
  if (id.trim() === '') return { problem: 'is blank' };
  if (id.length > MAX_ID_CHARS) return { problem: `is longer than ${MAX_ID_CHARS} characters` };
  return { id };
}
