import type { MemorychatClient } from 'memorychat-client';

/**
 * The problems that mean memorychat needs the user's own Denodo identity, which they give by signing
 * in once with the company's identity provider (docs/account-linking.md): never linked, or the link
 * expired or was revoked.
 */
export function needsSignIn(code: string | undefined): code is 'account-not-linked' | 'account-link-expired' {
  return code === 'account-not-linked' || code === 'account-link-expired';
}

/**
 * "Sign in to Denodo", with the sign-in link memorychat makes for this user (`POST /me/account-link`,
 * valid once, for minutes): posted for the user's eyes only, since whoever opens it links their own
 * account to this Slack user.
 */
export async function signInText(memorychat: MemorychatClient, code: 'account-not-linked' | 'account-link-expired'): Promise<string> {
  const { data, error } = await memorychat.POST('/me/account-link');
  if (!data)
    return `:warning: I need you to sign in to Denodo, but memorychat could not make a sign-in link: ${escapeLink(error?.detail ?? 'no reply')}`;
  const why = code === 'account-link-expired' ? 'Your Denodo sign-in has expired.' : 'I answer with your own Denodo permissions.';
  const minutes = Math.max(1, Math.round((Date.parse(data.expires_at) - Date.now()) / 60_000));
  return `:key: ${why} <${escapeLink(data.authorization_url)}|Sign in to Denodo> once, then ask again. The link is for you alone and works once, within ${minutes} minutes.`;
}

/** Slack reads `&`, `<` and `>` as markup in message text, a link's URL included: escaped as its formatting docs ask. */
function escapeLink(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
