import Type, { type Static } from 'typebox';
import { ANSWER_BACKENDS } from '../../model/answer-backends.js';
import { literalUnion } from '../../model/literal-union.js';
import { ConfigError } from '../config-error.js';
import { DURATION_PATTERN, parseDurationMs } from '../duration.js';

/** The answerer, and the upstream answerQuestion it calls with ANSWER_BACKEND=upstream. */
export const UpstreamAnswererSchema = Type.Object({
  ANSWER_BACKEND: Type.Optional(literalUnion(ANSWER_BACKENDS)),
  ANSWER_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  // Unset: `forward` with an upstream answerer (each caller's Denodo credentials, so VDP applies each
  // user's permissions), `none` otherwise. docs/denodo-ai-sdk.md says what each mode means.
  ANSWER_AUTH: Type.Optional(Type.Union([Type.Literal('forward'), Type.Literal('basic'), Type.Literal('bearer'), Type.Literal('none')])),
  // The most bytes read of one answerer reply (and the most a /memoryChat reply may carry): past it, 502.
  ANSWER_MAX_REPLY_BYTES: Type.Integer({ minimum: 65_536, maximum: 268_435_456, default: 16_777_216 }),
  ANSWER_BASIC_USER: Type.Optional(Type.String()),
  ANSWER_BASIC_PASSWORD: Type.Optional(Type.String()),
  ANSWER_BEARER_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  ANSWER_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 120_000 }),
  // A Denodo-AI-SDK-compatible /executeVQL, for re-running stored SQL (`result.csv?fresh=true`).
  ANSWER_EXECUTE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  // Put before every custom_instructions memorychat sends: the Denodo AI SDK 0.5 lets a request's
  // custom_instructions replace its CUSTOM_INSTRUCTIONS (newer versions merge them; leave this unset there).
  ANSWER_OPERATOR_INSTRUCTIONS: Type.Optional(Type.String({ maxLength: 20_000 })),
  // The header memorychat's request id goes upstream in, so one question can be followed through both
  // services' logs; the Denodo AI SDK names its transaction id X-Transaction-ID. Empty: not sent.
  ANSWER_REQUEST_ID_HEADER: Type.String({ pattern: '^[A-Za-z0-9-]*$', maxLength: 100, default: 'X-Transaction-ID' }),
  // How the Denodo AI SDK takes vdp_database_names, vdp_tag_names and use_views: `list` (1.4), `comma`
  // (comma-separated strings, 0.5 to 1.2.1), or `auto`: learnt from its /openapi.json or its first 422.
  ANSWER_LIST_FIELDS: Type.Union([Type.Literal('auto'), Type.Literal('list'), Type.Literal('comma')], { default: 'auto' }),
  // How long the upstream's answer about which views a credential may read is trusted before it is
  // asked again: a view revoked in Denodo leaves memory after at most this long (docs/denodo-ai-sdk.md).
  MEMORY_VIEW_PERMISSIONS_TTL: Type.String({ pattern: DURATION_PATTERN, default: '60s' }),
  // The most credentials whose view permissions are held at once; the least recently used go first.
  MEMORY_VIEW_PERMISSIONS_CACHE_ENTRIES: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 10_000 }),
});

export type UpstreamAnswererVariables = Static<typeof UpstreamAnswererSchema>;

/** The credentials each ANSWER_AUTH mode sends upstream, checked whichever answerer is chosen. */
export function checkUpstreamAuth(raw: UpstreamAnswererVariables): void {
  if (raw.ANSWER_AUTH === 'basic' && (!raw.ANSWER_BASIC_USER || raw.ANSWER_BASIC_PASSWORD === undefined)) {
    throw new ConfigError('ANSWER_BASIC_USER and ANSWER_BASIC_PASSWORD: required when ANSWER_AUTH=basic');
  }
  if (raw.ANSWER_AUTH === 'bearer' && !raw.ANSWER_BEARER_TOKEN) {
    throw new ConfigError('ANSWER_BEARER_TOKEN: required when ANSWER_AUTH=bearer');
  }
}

export function deriveUpstreamAnswerer(raw: UpstreamAnswererVariables) {
  return { viewPermissionsTtlMs: parseDurationMs(raw.MEMORY_VIEW_PERMISSIONS_TTL) };
}
