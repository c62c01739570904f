import Type, { type Static } from 'typebox';
import { ConfigError } from '../config-error.js';
import { type CustomPiiPattern, parseCustomPiiPatterns } from '../pii-patterns.js';

/** Privacy and stored results: what a turn keeps, and personal data in it. */
export const PrivacySchema = Type.Object({
  // Result rows a turn keeps (0: none; the CSV export says when rows were cut, `fresh` re-runs the SQL).
  MEMORY_STORE_RESULT_ROWS: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 10_000 }),
  // The stored result's size as JSON; fewer rows are kept to fit.
  MEMORY_STORE_RESULT_BYTES: Type.Integer({ minimum: 1024, maximum: 104_857_600, default: 1_048_576 }),
  // Each stored text (answer, SQL, explanation, question) in UTF-8 bytes; longer ones are cut with a marker.
  MEMORY_STORE_TEXT_BYTES: Type.Integer({ minimum: 1024, maximum: 104_857_600, default: 262_144 }),
  // Personal data in stored turns (docs/privacy.md): unset → `mask` in production, `off` elsewhere.
  MEMORY_PII: Type.Optional(Type.Union([Type.Literal('off'), Type.Literal('mask'), Type.Literal('hash')])),
  // The HMAC key of MEMORY_PII=hash; the same on every replica, or equal values stop linking up.
  MEMORY_PII_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  // More detectors: a JSON object of `name: regular expression`; matches read `[name]`.
  MEMORY_PII_PATTERNS: Type.Optional(Type.String({ minLength: 1 })),
});

export type PrivacyVariables = Static<typeof PrivacySchema>;

export function derivePrivacy(raw: PrivacyVariables & { NODE_ENV: string }): {
  piiMode: 'off' | 'mask' | 'hash';
  piiPatterns: CustomPiiPattern[];
} {
  const piiMode = raw.MEMORY_PII ?? (raw.NODE_ENV === 'production' ? 'mask' : 'off');
  if (piiMode === 'hash' && !raw.MEMORY_PII_SECRET) {
    throw new ConfigError('MEMORY_PII_SECRET: required when MEMORY_PII=hash (at least 32 characters, the same on every replica)');
  }
  let piiPatterns: CustomPiiPattern[] = [];
  if (raw.MEMORY_PII_PATTERNS) {
    try {
      piiPatterns = parseCustomPiiPatterns(raw.MEMORY_PII_PATTERNS);
    } catch (err) {
      throw new ConfigError(`MEMORY_PII_PATTERNS: ${(err as Error).message}`);
    }
  }
  return { piiMode, piiPatterns };
}
