import fc from 'fast-check';
import { anyJson, deepJson, edgeNumbers, fuzzText, hugeText, NASTY_STRINGS, UNSTORABLE } from './values.js';

/** A body as bytes, with the content type it is sent under (undefined: no Content-Type header). */
export interface FuzzBody {
  bytes: Buffer;
  contentType?: string;
  /** What kind of damage was done, for the report. */
  variant: string;
}

/** Stands in for a deeply nested value until the JSON text is written (JSON.stringify would overflow). */
const DEEP_MARKER = '\u0001deep\u0001';

const wrongTypes = fc.constantFrom<unknown>({}, [], true, false, null, 0, -1, '1', 'true', [null], { '': '' });

/** A replacement value for one field: hostile text, huge text, deep nesting, edge numbers, wrong types. */
const hostileValue = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 2, arbitrary: fc.constantFrom(...UNSTORABLE) },
  { weight: 2, arbitrary: anyJson },
  { weight: 2, arbitrary: wrongTypes },
  { weight: 1, arbitrary: hugeText },
  { weight: 1, arbitrary: edgeNumbers },
  { weight: 1, arbitrary: fc.constant(DEEP_MARKER) },
);

const hostileKey = fc.oneof(
  fuzzText,
  fc.constantFrom('__proto__', 'constructor', 'prototype', '', 'question ', 'QUESTION', 'x'.repeat(5000)),
);

type Mutation = { kind: 'set'; key: string; value: unknown } | { kind: 'delete'; key: string } | { kind: 'replace'; value: unknown };

/** One to three mutations of a valid body: fields set to hostile values, removed, or the body replaced. */
function mutations(fieldNames: string[]): fc.Arbitrary<Mutation[]> {
  const existing = fieldNames.length ? fc.constantFrom(...fieldNames) : hostileKey;
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('set' as const),
        key: fc.oneof({ weight: 4, arbitrary: existing }, hostileKey),
        value: hostileValue,
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: existing }) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('replace' as const), value: fc.oneof(anyJson, wrongTypes, fc.constant(DEEP_MARKER)) }),
    },
  );
  return fc.array(mutation, { minLength: 1, maxLength: 3 });
}

/** Generated values may be shared constants: each body gets copies, so no sample changes another. */
function applyMutations(valid: unknown, list: Mutation[]): unknown {
  let body: unknown = structuredClone(valid);
  for (const m of list) {
    if (m.kind === 'replace') body = structuredClone(m.value);
    else if (body && typeof body === 'object' && !Array.isArray(body)) {
      // defineProperty: a plain assignment to "__proto__" would set the prototype, not a field.
      if (m.kind === 'set')
        Object.defineProperty(body, m.key, { value: structuredClone(m.value), enumerable: true, configurable: true, writable: true });
      else delete (body as Record<string, unknown>)[m.key];
    }
  }
  return body;
}

/** JSON text for a body, with the deep marker expanded into nesting no serializer would write. */
function jsonText(body: unknown, deep: string): string {
  return JSON.stringify(body ?? null).replaceAll(JSON.stringify(DEEP_MARKER), deep);
}

const MALFORMED_JSON = [
  '',
  '{',
  '{"question":}',
  "{'question': 'single quotes'}",
  '{"question": "a",}',
  '{"question": "a" /* comment */}',
  '{"question": NaN}',
  '{"question": Infinity}',
  '{"question": "\\x41"}',
  '{"question": "\\uZZZZ"}',
  '{"question": "unterminated',
  '{"question": "a"} trailing',
  '\uFEFF{"question": "bom"}',
  '{"__proto__": {"isAdmin": true}, "question": "a"}',
  '{"constructor": {"prototype": {"isAdmin": true}}, "question": "a"}',
  '{"question": "a", "question": "duplicate"}',
  '{"k": 1e999999}',
  '-',
  'null',
  '"just a string"',
  '[1, 2, 3]',
  ' '.repeat(10_000),
  '{"question": "\\ud800\\udc00\\ud800"}',
  '{"question": "\\u0000"}',
];

const INVALID_UTF8 = [
  Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
  Buffer.from('{"question": "\xC0\x80 overlong NUL"}', 'latin1'),
  Buffer.from('{"question": "\xED\xA0\x80 CESU surrogate"}', 'latin1'),
  Buffer.from('{"question": "\x80\x81 stray continuation"}', 'latin1'),
  Buffer.from([0x00, 0x00, 0x00]),
];

const CONTENT_TYPES = [
  undefined,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=fuzz',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'APPLICATION/JSON',
  'application/json;;;',
  'application/jsonx',
  'application/problem+json',
  'application/xml',
  '*/*',
  'application/json, text/plain',
  'x'.repeat(3000),
];

/** A request body for an operation whose schema produced `valid`: intact, mutated, or broken as bytes. */
export function fuzzBody(valid: fc.Arbitrary<unknown>, fieldNames: string[], bodyLimitBytes: number): fc.Arbitrary<FuzzBody> {
  const json = (bytes: string, variant: string): FuzzBody => ({ bytes: Buffer.from(bytes), contentType: 'application/json', variant });
  return fc.oneof(
    { weight: 40, arbitrary: valid.map((body) => json(JSON.stringify(body), 'valid')) },
    {
      weight: 60,
      arbitrary: fc
        .tuple(valid, mutations(fieldNames), deepJson)
        .map(([body, list, deep]) => json(jsonText(applyMutations(body, list), deep), `mutated:${list.map((m) => m.kind).join('+')}`)),
    },
    {
      weight: 10,
      arbitrary: fc.tuple(valid, fc.nat()).map(([body, at]) => {
        const text = JSON.stringify(body);
        return json(text.slice(0, at % Math.max(1, text.length)), 'truncated');
      }),
    },
    { weight: 20, arbitrary: fc.constantFrom(...MALFORMED_JSON).map((text) => json(text, 'malformed-json')) },
    { weight: 10, arbitrary: deepJson.map((deep) => json(deep, 'deep-body')) },
    {
      weight: 10,
      arbitrary: fc.constantFrom(...INVALID_UTF8).map((bytes) => ({ bytes, contentType: 'application/json', variant: 'invalid-utf8' })),
    },
    {
      weight: 20,
      arbitrary: fc
        .tuple(valid, fc.constantFrom(...CONTENT_TYPES))
        .map(([body, contentType]) => ({ bytes: Buffer.from(JSON.stringify(body)), contentType, variant: 'content-type' })),
    },
    { weight: 2, arbitrary: fc.constant(json(`{"question": "${'x'.repeat(bodyLimitBytes)}"}`, 'over-body-limit')) },
  );
}
