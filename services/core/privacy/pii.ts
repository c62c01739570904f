import { createHmac } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { CustomPiiPattern } from '../../config/pii-patterns.js';
import type { PiiMasker, PiiMode } from '../deps.js';

export interface PiiMaskerOptions {
  mode: PiiMode;
  /** The HMAC key of `hash` mode (MEMORY_PII_SECRET). */
  secret?: string;
  custom?: CustomPiiPattern[];
}

interface Detector {
  kind: string;
  pattern: RegExp;
  /** Rejects candidates the pattern alone cannot tell apart (checksums, date shapes). */
  accept?: (match: string) => boolean;
  /** What the keyed hash is taken of, so the same value written differently links up. */
  normalize: (match: string) => string;
}

const digitsOf = (s: string) => s.replace(/\D/g, '');
const compact = (s: string) => s.replace(/[\s-]/g, '').toUpperCase();

/**
 * Payment card numbers: 13 to 19 digits, bare or in the printed groups (4-4-4-4…, Amex 4-6-5), Luhn-valid.
 */
const CARD_SHAPE = /^(?:\d{13,19}|\d{4}([ -])\d{4}\1\d{4}\1\d{1,7}|\d{4}([ -])\d{6}\2\d{4,5})$/;
function cardValid(match: string): boolean {
  if (!CARD_SHAPE.test(match)) return false;
  const digits = digitsOf(match);
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** ISO 13616: move the country and check digits to the end, letters to numbers, the whole mod 97 is 1. */
function ibanValid(match: string): boolean {
  const iban = compact(match);
  if (iban.length < 15 || iban.length > 34) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0);
    const value = code >= 65 ? String(code - 55) : ch;
    for (const digit of value) remainder = (remainder * 10 + (digit.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

/**
 * Phone numbers: international (`+` and 8 to 15 digits), or a national shape written with separators:
 * North American `(555) 123-4567` / `555-123-4567`, or a trunk-prefix `0` number in groups (`020 7946 0958`,
 * `06 12 34 56 78`, `030-12345678`). Bare digit runs (order numbers, ids) and date shapes are not phones.
 */
const NANP = /^(?:\(\d{3}\) ?|\d{3}[-. ])\d{3}[-. ]\d{4}$/;
const TRUNK = /^(?:\(0\d{1,4}\) ?|0\d{1,4}[- ])\d{2,8}(?:[- ]\d{2,4}){0,4}$/;
function phoneValid(match: string): boolean {
  const digits = digitsOf(match).length;
  if (match.startsWith('+')) return digits >= 8 && digits <= 15;
  if (digits < 9 || digits > 12) return false;
  return NANP.test(match) || TRUNK.test(match);
}

const IPV4_OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';

// Order matters: an email's digits are not a phone, an IBAN's digits are not a card.
const BUILT_IN: Detector[] = [
  {
    kind: 'email',
    pattern: /(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])/g,
    normalize: (s) => s.toLowerCase(),
  },
  {
    kind: 'iban',
    pattern: /(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![\w])/g,
    accept: ibanValid,
    normalize: compact,
  },
  {
    kind: 'card',
    pattern: /(?<![\w.,-])\d(?:[ -]?\d){12,18}(?![\w]|[.,]\d)/g,
    accept: cardValid,
    normalize: digitsOf,
  },
  {
    kind: 'ip',
    pattern: /(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:]|\.\d)/g,
    accept: (s) => isIPv6(s),
    normalize: (s) => s.toLowerCase(),
  },
  {
    kind: 'ip',
    pattern: new RegExp(`(?<![\\w.])${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}(?![\\w]|\\.\\d)`, 'g'),
    normalize: (s) => s,
  },
  {
    kind: 'phone',
    pattern:
      /(?<![\w.+/-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\) ?)?\d{1,4}(?:[ .-]\d{1,8}){1,5}(?![\w/]|[.-]\d)|(?<![\w.+/-])\+\d{8,15}(?!\w)/g,
    accept: phoneValid,
    normalize: (s) => (s.startsWith('+') ? '+' : '') + digitsOf(s),
  },
];

const DIGIT = /\d/;

/** Every built-in detector needs an `@`, a `:` (IPv6) or a digit, and the shortest match (`::1`) is 3 characters. */
function mayHoldBuiltInPii(value: string): boolean {
  return value.length >= 3 && (value.includes('@') || value.includes(':') || DIGIT.test(value));
}

/** A literal in single quotes, with '' as an escaped quote. */
const SQL_STRING_LITERAL = /'(?:[^']|'')*'/g;

export function createPiiMasker(options: PiiMaskerOptions): PiiMasker {
  const { mode } = options;
  const kinds = ['email', 'phone', 'card', 'iban', 'ip', ...(options.custom ?? []).map((c) => c.name)];
  const maskedToken = new RegExp(`\\[(?:${kinds.join('|')})(?::[0-9a-f]{12})?\\]`);
  const hasMaskedLiteral = (sql: string) => (sql.match(SQL_STRING_LITERAL) ?? []).some((literal) => maskedToken.test(literal));
  if (mode === 'off') {
    return { mode, text: (v) => v, optionalText: (v) => v, json: (v) => v, sql: (v) => v, hasMaskedLiteral };
  }
  if (mode === 'hash' && !options.secret) throw new Error('hash mode needs a secret');
  const custom = options.custom ?? [];
  const detectors: Detector[] = [...BUILT_IN, ...custom.map((c) => ({ kind: c.name, pattern: c.pattern, normalize: (s: string) => s }))];
  const token =
    mode === 'mask'
      ? (kind: string) => `[${kind}]`
      : (kind: string, value: string) =>
          `[${kind}:${createHmac('sha256', options.secret as string)
            .update(`${kind}\u0000${value}`)
            .digest('hex')
            .slice(0, 12)}]`;

  const text = (value: string): string => {
    // Most stored strings (result cells, short labels) can hold no built-in PII: skip the regex passes.
    if (!custom.length && !mayHoldBuiltInPii(value)) return value;
    let out = value;
    for (const d of detectors) {
      d.pattern.lastIndex = 0;
      out = out.replace(d.pattern, (match) => replaceValid(d, match, token));
    }
    return out;
  };
  const json = <T>(value: T): T => maskJson(value, text) as T;
  return {
    mode,
    text,
    optionalText: (v) => (v === null ? v : text(v)),
    json,
    sql: (v) => (v === null ? v : v.replace(SQL_STRING_LITERAL, (literal) => text(literal))),
    hasMaskedLiteral,
  };
}

/**
 * A greedy pattern can take in a following group (`DE89 3704 … 00 EUR`): when the whole candidate
 * fails its check, shorter prefixes ending at a separator are tried, and the rest is kept as written.
 */
function replaceValid(d: Detector, match: string, token: (kind: string, value: string) => string): string {
  if (!d.accept) return token(d.kind, d.normalize(match));
  for (let end = match.length; end > 0; end = match.lastIndexOf(' ', end - 1)) {
    const candidate = match.slice(0, end);
    if (d.accept(candidate)) return token(d.kind, d.normalize(candidate)) + match.slice(end);
  }
  return match;
}

function maskJson(value: unknown, text: (s: string) => string): unknown {
  if (typeof value === 'string') return text(value);
  if (Array.isArray(value)) return value.map((v) => maskJson(v, text));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = maskJson(v, text);
    return out;
  }
  return value;
}
