import fc from 'fast-check';
import { PROMPT_INJECTION, plainText, SQL_INJECTION, UNICODE } from './values.js';

/** The part of JSON Schema the service's OpenAPI document uses. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
}

/** Values to use for a named property instead of what its schema alone would produce. */
export type Overrides = Record<string, fc.Arbitrary<unknown>>;

/** Storable text that a valid request may carry: plain words, SQL and prompt injection, unicode. */
const storableText = fc.oneof(
  { weight: 3, arbitrary: plainText },
  { weight: 2, arbitrary: fc.constantFrom(...SQL_INJECTION, ...PROMPT_INJECTION, ...UNICODE) },
);

/**
 * Values the schema accepts, so that a good share of the fuzz reaches the handlers and the
 * database rather than stopping at validation. Lengths stay short; limits are the mutator's job.
 */
export function validValue(schema: JsonSchema, overrides: Overrides = {}, name?: string): fc.Arbitrary<unknown> {
  if (name && overrides[name]) return overrides[name]!;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return fc.oneof(...variants.map((v) => validValue(v, overrides)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if ('const' in schema) return fc.constant(schema.const);
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'string':
      return validString(schema);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? 0, max: Math.min(schema.maximum ?? 1000, (schema.minimum ?? 0) + 1000) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(validValue(schema.items ?? {}, overrides), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3)),
      });
    case 'object':
      return validObject(schema, overrides);
    default:
      return fc.oneof(storableText, fc.integer(), fc.dictionary(plainText, storableText, { maxKeys: 3 }));
  }
}

function validObject(schema: JsonSchema, overrides: Overrides): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const record = Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, validValue(s, overrides, key)]));
  return fc.record(record, { requiredKeys: schema.required ?? [] });
}

function validString(schema: JsonSchema): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return fc.uuid();
  if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? 200;
  const base = schema.pattern && schema.pattern !== '\\S' ? fc.stringMatching(new RegExp(schema.pattern)) : storableText;
  return base.filter((s) => [...s].length >= min && [...s].length <= max && (schema.pattern !== '\\S' || /\S/.test(s)));
}
