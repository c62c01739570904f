import Type from 'typebox';

export const AccountLinkStart = Type.Object(
  {
    authorization_url: Type.String({
      format: 'uri',
      description: "The identity provider's sign-in page for this user: a bot sends it to them as a link",
    }),
    expires_at: Type.String({ format: 'date-time', description: 'The link works once, until then (ACCOUNT_LINK_TTL)' }),
  },
  {
    examples: [
      {
        authorization_url:
          'https://login.example.com/oauth2/authorize?client_id=memorychat&response_type=code&scope=openid%20offline_access&state=AQVrMjAyNg&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256',
        expires_at: '2026-12-01T10:10:00.000Z',
      },
    ],
  },
);

export const AccountLinkStatus = Type.Object({
  status: Type.Union([Type.Literal('linked'), Type.Literal('expired'), Type.Literal('not-linked')], {
    description: '`expired`: the provider or the answerer refused the tokens; the user must sign in again',
  }),
  issuer: Type.Union([Type.String(), Type.Null()]),
  subject: Type.Union([Type.String(), Type.Null()], { description: "The provider's `sub` of the linked account" }),
  username: Type.Union([Type.String(), Type.Null()], { description: 'Its `preferred_username`, when the ID token had one' }),
  linked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

export const AccountUnlinked = Type.Object({
  unlinked: Type.Literal(true),
  revoked_at_provider: Type.Boolean({
    description: 'Whether the provider revoked the tokens (false: it offers no revocation, or it failed; they are deleted here either way)',
  }),
});

/** What the provider sends the browser back with (RFC 6749 §4.1.2, RFC 9207's `iss`); providers may add more. */
export const AccountLinkCallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String()),
    state: Type.Optional(Type.String()),
    iss: Type.Optional(Type.String()),
    error: Type.Optional(Type.String()),
    error_description: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
