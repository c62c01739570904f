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
 * "Sign in to Denodo" as Telegram HTML, with the sign-in link memorychat makes for this user
 * (`POST /me/account-link`, valid once, for minutes). Sent only in the user's private chat with the
 * bot: whoever opens it links their own account to this Telegram user.
 */
export async function signInHtml(memorychat: MemorychatClient, code: 'account-not-linked' | 'account-link-expired'): Promise<string> {
  const { data, error } = await memorychat.POST('/me/account-link');
  if (!data)
    return `I need you to sign in to Denodo, but memorychat could not make a sign-in link: ${escapeHtml(error?.detail ?? 'no reply')}`;
  const why = code === 'account-link-expired' ? 'Your Denodo sign-in has expired.' : 'I answer with your own Denodo permissions.';
  const minutes = Math.max(1, Math.round((Date.parse(data.expires_at) - Date.now()) / 60_000));
  return `${why} <a href="${escapeHtml(data.authorization_url)}">Sign in to Denodo</a> once, then ask again. The link is for you alone and works once, within ${minutes} minutes.`;
}

/** Telegram's HTML parse mode needs only these three escaped (a quote too inside an attribute). */
function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
